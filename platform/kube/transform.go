package kube

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

// transform is the informers' TransformFunc: it replaces every Pod,
// Deployment and StatefulSet with a copy holding only the fields thaw reads,
// so a cluster with many pods costs little memory. It is idempotent
// (transforming a transformed object changes nothing) and passes any other
// object, including cache tombstones, through unchanged.
//
// Kept fields:
//   - every object: name, namespace, UID, resourceVersion, creation and
//     deletion timestamps;
//   - Pod: labels, ownerReferences, the pod-deletion-cost annotation,
//     container ports, status.podIP, the Ready condition (status and
//     transition time only), a False PodScheduled condition (reason and
//     message) and the containers' waiting state (reason and message), which
//     say that a wake-up failed (wakefailure.go);
//   - Deployment and StatefulSet carrying thaw.dev/hosts: thaw's and the
//     autoscaling annotations, spec.replicas, spec.selector and the
//     container ports of the pod template. Other workloads keep only their
//     metadata identity, so losing the annotation is seen as an update.
func transform(obj any) (any, error) {
	switch o := obj.(type) {
	case *corev1.Pod:
		return slimPod(o), nil
	case *appsv1.Deployment:
		return slimDeployment(o), nil
	case *appsv1.StatefulSet:
		return slimStatefulSet(o), nil
	default:
		// cache.DeletedFinalStateUnknown and anything else: already
		// transformed, or not ours.
		return obj, nil
	}
}

var _ cache.TransformFunc = transform

// slimMeta keeps the identity fields of an object. Annotations are kept only
// when keepAnnotations is set, and then only thaw's own.
func slimMeta(m *metav1.ObjectMeta, keepAnnotations bool) metav1.ObjectMeta {
	out := metav1.ObjectMeta{
		Name:              m.Name,
		Namespace:         m.Namespace,
		UID:               m.UID,
		ResourceVersion:   m.ResourceVersion,
		Generation:        m.Generation,
		CreationTimestamp: m.CreationTimestamp,
		DeletionTimestamp: m.DeletionTimestamp,
	}
	if keepAnnotations {
		for k, v := range m.Annotations {
			if keepAnnotation(k) {
				if out.Annotations == nil {
					out.Annotations = map[string]string{}
				}
				out.Annotations[k] = v
			}
		}
	}
	return out
}

// slimPodSpec keeps the container ports of a pod spec (names and
// protocols included), nothing else.
func slimPodSpec(s *corev1.PodSpec) corev1.PodSpec {
	var out corev1.PodSpec
	for _, c := range s.Containers {
		if len(c.Ports) == 0 {
			continue
		}
		out.Containers = append(out.Containers, corev1.Container{Name: c.Name, Ports: c.Ports})
	}
	return out
}

func slimPod(p *corev1.Pod) *corev1.Pod {
	meta := slimMeta(&p.ObjectMeta, false)
	meta.Labels = p.Labels
	meta.OwnerReferences = p.OwnerReferences
	if c, ok := p.Annotations[AnnotationPodDeletionCost]; ok {
		meta.Annotations = map[string]string{AnnotationPodDeletionCost: c}
	}
	out := &corev1.Pod{
		ObjectMeta: meta,
		Spec:       slimPodSpec(&p.Spec),
		Status:     corev1.PodStatus{PodIP: p.Status.PodIP},
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			out.Status.Conditions = []corev1.PodCondition{{
				Type:               c.Type,
				Status:             c.Status,
				LastTransitionTime: c.LastTransitionTime,
			}}
			break
		}
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			out.Status.Conditions = append(out.Status.Conditions, corev1.PodCondition{
				Type: c.Type, Status: c.Status, Reason: c.Reason, Message: c.Message,
			})
			break
		}
	}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.State.Waiting != nil {
			out.Status.ContainerStatuses = append(out.Status.ContainerStatuses, corev1.ContainerStatus{Name: cs.Name,
				State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: cs.State.Waiting.Reason, Message: cs.State.Waiting.Message}}})
		}
	}
	return out
}

func slimDeployment(d *appsv1.Deployment) *appsv1.Deployment {
	rev := isRevision(d.Annotations)
	out := &appsv1.Deployment{ObjectMeta: slimMeta(&d.ObjectMeta, rev)}
	if rev {
		out.Spec = appsv1.DeploymentSpec{
			Replicas: d.Spec.Replicas,
			Selector: d.Spec.Selector,
			Template: corev1.PodTemplateSpec{Spec: slimPodSpec(&d.Spec.Template.Spec)},
		}
	}
	return out
}

func slimStatefulSet(s *appsv1.StatefulSet) *appsv1.StatefulSet {
	rev := isRevision(s.Annotations)
	out := &appsv1.StatefulSet{ObjectMeta: slimMeta(&s.ObjectMeta, rev)}
	if rev {
		out.Spec = appsv1.StatefulSetSpec{
			Replicas: s.Spec.Replicas,
			Selector: s.Spec.Selector,
			Template: corev1.PodTemplateSpec{Spec: slimPodSpec(&s.Spec.Template.Spec)},
		}
	}
	return out
}
