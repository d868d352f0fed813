package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/thaw-dev/thaw/revision"
)

// Status is the JSON value of the thaw.dev/status annotation.
type Status struct {
	// Mode is "serve", "proxy" or "invalid".
	Mode string `json:"mode"`
	// Desired is the autoscaler's last decision (pods), -1 before the first.
	Desired int32 `json:"desired"`
	// Ready is the number of ready backends (pods) Envoy may route to.
	Ready int32 `json:"ready"`
	// Error is the configuration error of an invalid revision.
	Error string `json:"error,omitempty"`
}

// reportLoop records mode-flip Events as snapshots change and, every
// StatusInterval, patches the thaw.dev/status annotations and Revision
// statuses that differ from the registry (both only while leading) and
// queues Revisions whose scale target view is stale. It returns when ctx
// ends.
func (p *Platform) reportLoop(ctx context.Context, ch <-chan struct{}, prev *revision.Snapshot) {
	reg := p.opts.Registry
	var tick <-chan time.Time
	if interval := p.statusInterval(); interval > 0 {
		t := p.opts.Clock.NewTicker(interval)
		defer t.Stop()
		tick = t.C()
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-ch:
			ch = reg.Changed()
			cur := reg.Snapshot()
			p.modeEvents(prev, cur)
			p.splitsChanged(prev, cur)
			prev = cur
		case <-tick:
			if p.revisions != nil {
				p.refreshTargets(p.opts.Clock.Now())
			}
			p.syncStatuses(ctx, reg.Snapshot())
		}
	}
}

// modeEvents records a ServeMode or ProxyMode Event for every revision whose
// mode differs between two snapshots.
func (p *Platform) modeEvents(prev, cur *revision.Snapshot) {
	if !p.Leading() {
		return
	}
	for key := range cur.Changes(prev) {
		old, rev := prev.Get(key), cur.Get(key)
		if old == nil || rev == nil || old.Mode == rev.Mode {
			continue
		}
		p.mu.Lock()
		var ref *corev1.ObjectReference
		if st := p.revs[key]; st != nil {
			ref = st.ref
		}
		p.mu.Unlock()
		if ref == nil {
			continue
		}
		ready := len(rev.ReadyBackends())
		if rev.Mode == revision.ModeServe {
			p.recorder.Eventf(ref, corev1.EventTypeNormal, ReasonServeMode,
				"traffic goes straight to the %d ready pods (serve mode)", ready)
		} else {
			p.recorder.Eventf(ref, corev1.EventTypeNormal, ReasonProxyMode,
				"traffic goes through the activator (proxy mode); %d ready pods", ready)
		}
	}
}

type statusPatch struct {
	key   revision.Key
	kind  Kind
	value string
	log   *zap.Logger
}

// syncStatuses patches every thaw.dev/status annotation that differs from
// the registry, at most one patch per workload per call. The values are
// rendered from the registry's changes outside the platform lock
// (statusCache); under it only the workloads whose value or seen
// annotation changed are compared.
func (p *Platform) syncStatuses(ctx context.Context, snap *revision.Snapshot) {
	if !p.Leading() {
		return
	}
	annotate := p.opts.StatusInterval >= 0
	if annotate {
		p.statuses.update(snap)
	}
	var todo []statusPatch
	p.mu.Lock()
	revTodo, revEvents := p.revisionStatusesLocked(snap, p.opts.Clock.Now())
	if annotate {
		todo = p.statuses.dueLocked(p.revs, p.statusSeen)
	}
	clear(p.statusSeen)
	p.mu.Unlock()
	for _, ev := range revEvents {
		p.recorder.Event(ev.ref, ev.typ, ev.reason, ev.msg)
	}
	for _, sp := range revTodo {
		if ctx.Err() != nil || !p.Leading() {
			return
		}
		if err := p.patchRevisionStatus(ctx, sp); err != nil {
			p.metrics.revisionStatusPatches.WithLabelValues("error").Inc()
			sp.log.Warn("revision status", zap.Error(err))
			continue
		}
		p.metrics.revisionStatusPatches.WithLabelValues("ok").Inc()
		p.mu.Lock()
		if st := p.revs[sp.key]; st != nil && st.crd != nil {
			st.crd.status = sp.fingerprint
		}
		p.mu.Unlock()
	}
	for _, sp := range todo {
		if ctx.Err() != nil || !p.Leading() {
			return
		}
		if err := p.patchStatus(ctx, sp); err != nil {
			p.metrics.statusPatches.WithLabelValues("error").Inc()
			sp.log.Warn("status annotation", zap.Error(err))
			continue // still due: compared again next time
		}
		p.metrics.statusPatches.WithLabelValues("ok").Inc()
		p.mu.Lock()
		if st := p.revs[sp.key]; st != nil {
			st.status = sp.value
		}
		p.mu.Unlock()
		p.statuses.patched(sp.key, sp.value)
	}
}

// patchStatus merge-patches the annotation on the workload (metadata only).
func (p *Platform) patchStatus(ctx context.Context, sp statusPatch) error {
	body, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"annotations": map[string]string{AnnotationStatus: sp.value}},
	})
	if err != nil {
		return err
	}
	opts := metav1.PatchOptions{FieldManager: FieldManager}
	ns, name := sp.key.Namespace, sp.key.Name
	switch sp.kind {
	case KindStatefulSet:
		_, err = p.opts.Client.AppsV1().StatefulSets(ns).Patch(ctx, name, types.MergePatchType, body, opts)
	default:
		_, err = p.opts.Client.AppsV1().Deployments(ns).Patch(ctx, name, types.MergePatchType, body, opts)
	}
	if err != nil {
		return fmt.Errorf("patch %s %s: %w", sp.kind, sp.key, err)
	}
	return nil
}

// statusInterval is the period of the status loop: StatusInterval, or
// DefaultStatusInterval when only Revision statuses are written
// (StatusInterval < 0 disables the annotation, never Revision status).
func (p *Platform) statusInterval() time.Duration {
	if p.opts.StatusInterval < 0 {
		if p.revisions == nil {
			return 0
		}
		return DefaultStatusInterval
	}
	return p.opts.StatusInterval
}
