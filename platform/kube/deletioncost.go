package kube

import (
	"cmp"
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"

	"go.uber.org/zap"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/thaw-dev/thaw/revision"
)

// AnnotationPodDeletionCost is the pod annotation the ReplicaSet controller
// reads to choose which ready pods to delete when a ReplicaSet shrinks:
// lower cost first (an int32; no annotation means 0).
const AnnotationPodDeletionCost = "controller.kubernetes.io/pod-deletion-cost"

// DefaultMaxDeletionCostPatches bounds the pod patches of one scale-down.
const DefaultMaxDeletionCostPatches = 20

// maxDeletionCost caps the cost thaw writes (requests in flight).
const maxDeletionCost = 1_000_000

// LoadSource reports how busy each backend of a revision is.
type LoadSource interface {
	// BackendInFlight returns the requests in flight per backend address
	// ("ip:port") of revision key; backends absent have none. It must not
	// block.
	BackendInFlight(key revision.Key) map[string]int
}

// costPatch is one pod's new deletion cost.
type costPatch struct {
	pod  string
	cost int
}

// planDeletionCosts returns the pod-deletion-cost changes that make the
// ReplicaSet controller remove idle pods before busy ones: every serving
// pod's cost becomes its requests in flight (load by backend address at
// port, or the pod's first container port when port is 0), capped at
// maxDeletionCost. Only pods whose annotation differs are patched (a
// missing or unparsable annotation counts as a different value unless the
// wanted cost is 0 and the annotation is missing), the busiest first, at
// most limit. Pods that do not serve (not ready, terminating) are left
// alone: the controller removes them first anyway. When no pod is busy and
// no annotation is set, nothing is patched and the controller's own order
// applies.
func planDeletionCosts(pods []*corev1.Pod, port int32, load map[string]int, limit int) []costPatch {
	var out []costPatch
	for _, p := range pods {
		if !podServes(p) {
			continue
		}
		pp := port
		if pp == 0 {
			pp = firstContainerPort(&p.Spec)
		}
		want := min(load[net.JoinHostPort(p.Status.PodIP, strconv.Itoa(int(pp)))], maxDeletionCost)
		cur, set := p.Annotations[AnnotationPodDeletionCost]
		if !set && want == 0 {
			continue
		}
		if n, err := strconv.Atoi(cur); set && err == nil && n == want {
			continue
		}
		out = append(out, costPatch{pod: p.Name, cost: want})
	}
	slices.SortFunc(out, func(a, b costPatch) int {
		if c := cmp.Compare(b.cost, a.cost); c != 0 {
			return c
		}
		return cmp.Compare(a.pod, b.pod)
	})
	if len(out) > limit {
		out = out[:limit]
	}
	return out
}

// setDeletionCosts annotates the pods of a Deployment revision with their
// load (see planDeletionCosts) before a scale-down, so the ReplicaSet
// controller deletes idle pods first. Failed patches are logged and
// counted; the scale-down goes on.
func (p *Platform) setDeletionCosts(ctx context.Context, key revision.Key, kind Kind, log *zap.Logger) {
	if p.opts.Load == nil || kind != KindDeployment {
		return // a StatefulSet removes its highest ordinals whatever the cost
	}
	objs, err := p.pods.ByIndex(ownerIndex, ownerIndexValue(kind, key))
	if err != nil {
		log.Error("list pods for deletion costs", zap.Error(err))
		return
	}
	pods := make([]*corev1.Pod, 0, len(objs))
	for _, o := range objs {
		if pod, ok := o.(*corev1.Pod); ok {
			pods = append(pods, pod)
		}
	}
	p.patchDeletionCosts(ctx, key, pods, log)
}

// setRevisionDeletionCosts is setDeletionCosts for a Revision whose target
// is an apps/v1 Deployment or ReplicaSet (whose ReplicaSet controller reads
// the cost): its pods are those its selector matches.
func (p *Platform) setRevisionDeletionCosts(ctx context.Context, key revision.Key, t targetKey, sel labels.Selector, log *zap.Logger) {
	if p.opts.Load == nil || sel == nil || t.group != appsv1.GroupName || (t.kind != string(KindDeployment) && t.kind != "ReplicaSet") {
		return
	}
	objs, err := p.pods.ByIndex(cache.NamespaceIndex, key.Namespace)
	if err != nil {
		log.Error("list pods for deletion costs", zap.Error(err))
		return
	}
	pods := make([]*corev1.Pod, 0, len(objs))
	for _, o := range objs {
		if pod, ok := o.(*corev1.Pod); ok && sel.Matches(labels.Set(pod.Labels)) {
			pods = append(pods, pod)
		}
	}
	p.patchDeletionCosts(ctx, key, pods, log)
}

// patchDeletionCosts plans and writes the deletion costs of a revision's
// pods.
func (p *Platform) patchDeletionCosts(ctx context.Context, key revision.Key, pods []*corev1.Pod, log *zap.Logger) {
	var port int32
	if rev := p.opts.Registry.Snapshot().Get(key); rev != nil {
		port = rev.Spec.Port
	}
	plan := planDeletionCosts(pods, port, p.opts.Load.BackendInFlight(key), p.opts.MaxDeletionCostPatches)
	for _, c := range plan {
		patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, AnnotationPodDeletionCost, strconv.Itoa(c.cost))
		_, err := p.opts.Client.CoreV1().Pods(key.Namespace).Patch(ctx, c.pod, types.MergePatchType, patch,
			metav1.PatchOptions{FieldManager: FieldManager})
		if err != nil {
			p.metrics.costPatches.WithLabelValues("error").Inc()
			log.Warn("setting pod deletion cost failed", zap.String("pod", c.pod), zap.Error(err))
			continue
		}
		p.metrics.costPatches.WithLabelValues("ok").Inc()
		log.Debug("pod deletion cost set", zap.String("pod", c.pod), zap.Int("cost", c.cost))
	}
}
