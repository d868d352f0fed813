package kube

import (
	"context"
	"errors"
	"fmt"

	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/thaw-dev/thaw/autoscaler"
	"github.com/thaw-dev/thaw/revision"
)

// ErrNotLeader is returned by SetScale on a replica that does not lead (with
// Options.Elected): only the leader patches /scale, so two replicas never
// scale one workload.
var ErrNotLeader = errors.New("kube: not the leader")

// FieldManager is the field manager of thaw's patches.
const FieldManager = "thaw"

// GetScale returns the workload's desired replicas (spec.replicas from the
// informer cache, or the value this replica just patched when the cache has
// not caught up yet) and its ready backends (pods that are Ready, not
// terminating and have an IP: the same count Envoy routes to). It makes no
// API call. Errors wrap autoscaler.ErrNotFound when no annotated workload
// has the key; an invalid revision is found (its ready count is 0).
func (p *Platform) GetScale(_ context.Context, key revision.Key) (current, ready int32, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	st := p.revs[key]
	if st == nil {
		return 0, 0, fmt.Errorf("kube: revision %s: %w", key, autoscaler.ErrNotFound)
	}
	return st.current(), st.ready, nil
}

// SetScale patches the workload's (or the Revision's scale target's) /scale
// subresource to replicas (a JSON
// merge patch of spec.replicas, field manager "thaw") and records a Scaled
// Event when the count changes. Before a scale-down of a Deployment, with
// Options.Load, it first sets the pods' deletion costs (see
// setDeletionCosts); failures there are logged, not returned. Errors: ErrNotLeader on a follower, an error
// wrapping autoscaler.ErrNotFound when the workload is unknown or gone, an
// error for a negative count, one wrapping ErrOtherAutoscaler when a
// HorizontalPodAutoscaler scales the target (nothing written), or the API error (then a ScaleFailed Warning
// Event is recorded).
func (p *Platform) SetScale(ctx context.Context, key revision.Key, replicas int32) error {
	if replicas < 0 {
		return fmt.Errorf("kube: revision %s: scale %d: want >= 0", key, replicas)
	}
	if !p.Leading() {
		return ErrNotLeader
	}
	p.mu.Lock()
	st := p.revs[key]
	if st == nil || st.ref == nil {
		p.mu.Unlock()
		return fmt.Errorf("kube: revision %s: %w", key, autoscaler.ErrNotFound)
	}
	kind, ref, from, log := st.kind, st.ref, st.current(), st.log
	gvr, name := kind.gvr(), key.Name
	var crd *crdState
	if st.crd != nil {
		c := *st.crd
		crd = &c
		gvr, name = crd.gvr, crd.target.name
	}
	p.mu.Unlock()
	if gvr.Resource == "" {
		return fmt.Errorf("kube: revision %s: scale target not resolved: %w", key, autoscaler.ErrNotFound)
	}
	target := targetKey{namespace: key.Namespace, group: "apps", kind: string(kind), name: key.Name}
	if crd != nil {
		target = crd.target
	}
	if err := p.otherAutoscaler(target, "scale target"); err != nil {
		// Checked here too: an autoscaler added since the last reconcile
		// must never race thaw's write.
		return fmt.Errorf("kube: revision %s: %w", key, err)
	}
	switch {
	case replicas >= from:
	case crd != nil:
		p.setRevisionDeletionCosts(ctx, key, crd.target, crd.selector, log)
	default:
		p.setDeletionCosts(ctx, key, kind, log)
	}

	patch := fmt.Appendf(nil, `{"spec":{"replicas":%d}}`, replicas)
	got, err := p.scales.Scales(key.Namespace).Patch(ctx, gvr, name, types.MergePatchType, patch,
		metav1.PatchOptions{FieldManager: FieldManager})
	switch {
	case apierrors.IsNotFound(err):
		p.metrics.scalePatches.WithLabelValues("not_found").Inc()
		return fmt.Errorf("kube: revision %s: %s %s: %w", key, kind, name, errors.Join(autoscaler.ErrNotFound, err))
	case err != nil:
		p.metrics.scalePatches.WithLabelValues("error").Inc()
		p.recorder.Eventf(ref, corev1.EventTypeWarning, ReasonScaleFailed, "scaling to %d replicas failed: %v", replicas, err)
		return fmt.Errorf("kube: revision %s: patch %s scale: %w", key, kind, err)
	}
	p.metrics.scalePatches.WithLabelValues("ok").Inc()
	rv, ordered := parseRV(got.ResourceVersion)
	p.mu.Lock()
	switch cur := p.revs[key]; {
	case cur != nil && cur.crd != nil:
		// A Revision's target is read through /scale only: the patch's
		// answer is the latest view.
		cur.replicas, cur.pending = got.Spec.Replicas, nil
	case cur != nil:
		cur.pending = &pendingScale{replicas: got.Spec.Replicas, rv: rv, ordered: ordered}
	}
	p.mu.Unlock()
	if from != got.Spec.Replicas {
		log.Info("scaled", zap.Int32("from", from), zap.Int32("to", got.Spec.Replicas))
		p.recorder.Eventf(ref, corev1.EventTypeNormal, ReasonScaled, "scaled from %d to %d replicas", from, got.Spec.Replicas)
	}
	return nil
}
