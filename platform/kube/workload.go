package kube

import (
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// Kind is a workload kind thaw scales.
type Kind string

// Workload kinds. A revision's key is the namespace and name of its
// workload; see pickWinner for a Deployment and a StatefulSet of one name.
const (
	KindDeployment  Kind = "Deployment"
	KindStatefulSet Kind = "StatefulSet"
)

// gvr returns the resource of the kind, for the scale client.
func (k Kind) gvr() schema.GroupVersionResource {
	switch k {
	case KindStatefulSet:
		return appsv1.SchemeGroupVersion.WithResource("statefulsets")
	default:
		return appsv1.SchemeGroupVersion.WithResource("deployments")
	}
}

// workload is the part of a Deployment or StatefulSet thaw reads.
type workload struct {
	kind        Kind
	namespace   string
	name        string
	uid         types.UID
	rv          string
	created     metav1.Time
	deleting    bool
	annotations map[string]string
	// replicas is spec.replicas (nil means 1, the API default).
	replicas int32
	selector *metav1.LabelSelector
	template *corev1.PodSpec
}

func fromDeployment(d *appsv1.Deployment) *workload {
	return &workload{
		kind: KindDeployment, namespace: d.Namespace, name: d.Name, uid: d.UID, rv: d.ResourceVersion,
		created: d.CreationTimestamp, deleting: d.DeletionTimestamp != nil, annotations: d.Annotations,
		replicas: replicasOf(d.Spec.Replicas), selector: d.Spec.Selector, template: &d.Spec.Template.Spec,
	}
}

func fromStatefulSet(s *appsv1.StatefulSet) *workload {
	return &workload{
		kind: KindStatefulSet, namespace: s.Namespace, name: s.Name, uid: s.UID, rv: s.ResourceVersion,
		created: s.CreationTimestamp, deleting: s.DeletionTimestamp != nil, annotations: s.Annotations,
		replicas: replicasOf(s.Spec.Replicas), selector: s.Spec.Selector, template: &s.Spec.Template.Spec,
	}
}

func replicasOf(p *int32) int32 {
	if p == nil {
		return 1
	}
	return *p
}

// ref returns an object reference for Events on the workload.
func (w *workload) ref() *corev1.ObjectReference {
	return &corev1.ObjectReference{
		Kind: string(w.kind), APIVersion: appsv1.SchemeGroupVersion.String(),
		Namespace: w.namespace, Name: w.name, UID: w.uid, ResourceVersion: w.rv,
	}
}

// pickWinner chooses which of a Deployment and a StatefulSet of the same
// namespace/name (either may be nil) owns the revision key: the one created
// first, and the Deployment when both were created in the same second. The
// rule depends only on the objects, so every thaw replica agrees, and a
// revision already serving is never taken over by a later workload. The
// loser gets a KeyConflict Warning Event and is ignored while the winner
// exists.
func pickWinner(d, s *workload) (winner, loser *workload) {
	switch {
	case d == nil:
		return s, nil
	case s == nil:
		return d, nil
	case s.created.Before(&d.created):
		return s, d
	default:
		return d, s
	}
}

// parseRV parses a resourceVersion as the decimal counter the apiserver uses
// in practice; ok is false for anything else (then thaw does not order
// versions and trusts the cache).
func parseRV(rv string) (uint64, bool) {
	n, err := strconv.ParseUint(rv, 10, 64)
	return n, err == nil
}
