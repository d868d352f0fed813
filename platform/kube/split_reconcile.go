package kube

import (
	"context"

	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/thaw-dev/thaw/api/v1alpha1"
	"github.com/thaw-dev/thaw/revision"
)

// runSplits reconciles queued RevisionSplits until the queue shuts down.
func (p *Platform) runSplits(ctx context.Context) {
	sr := p.splits.Load()
	for {
		key, quit := sr.queue.Get()
		if quit {
			return
		}
		if err := p.reconcileSplit(ctx, key); err != nil {
			p.log.Warn("RevisionSplit status", zap.String("split", key.String()), zap.Error(err))
			sr.queue.AddRateLimited(key)
		} else {
			sr.queue.Forget(key)
		}
		sr.queue.Done(key)
	}
}

// reconcileSplit computes one RevisionSplit's status and counts it in the
// thaw_kube_revisionsplits gauge by Ready reason (every replica), and
// reports it (leader only): one Event per
// distinct Ready condition per leadership term (Warning while not Ready,
// Normal when it becomes Ready again; none while Pending) and a status
// write when the computed status differs from the object's and from the
// one last written. The error is a failed status write (retried with
// backoff).
func (p *Platform) reconcileSplit(ctx context.Context, key revision.Key) error {
	sr := p.splits.Load()
	obj, ok, err := sr.cache.GetByKey(key.String())
	s, _ := obj.(*v1alpha1.RevisionSplit)
	if err != nil || !ok || s == nil || s.DeletionTimestamp != nil {
		sr.mu.Lock()
		delete(sr.recs, key)
		p.setSplitReasonLocked(key, "")
		sr.mu.Unlock()
		return nil
	}
	snap := p.opts.Registry.Snapshot()
	in := splitInput{split: s, now: p.opts.Clock.Now(), decodeErr: s.Annotations[annotationDecodeError], fleet: snap.Splits[key]}
	in.taken = takenHosts(snap, in.fleet)
	in.routeErr = p.routeVerdict(key)
	for _, t := range s.Spec.Traffic {
		mk := revision.Key{Namespace: s.Namespace, Name: t.RevisionName}
		in.members = append(in.members, resolveMember(snap, mk, p.getRevision(mk) != nil))
	}
	status := splitStatus(in)
	fp := splitStatusFingerprint(status)
	ready := meta.FindStatusCondition(status.Conditions, v1alpha1.ConditionReady)
	sr.mu.Lock()
	p.setSplitReasonLocked(key, ready.Reason)
	if !p.Leading() {
		sr.mu.Unlock()
		return nil
	}
	rec := sr.recs[key]
	if rec == nil {
		rec = &splitRecord{}
		sr.recs[key] = rec
	}
	report := ready.Reason + ": " + ready.Message
	var evType string
	switch {
	case rec.reported == report || ready.Status == metav1.ConditionUnknown:
	case ready.Status == metav1.ConditionFalse:
		evType = corev1.EventTypeWarning
	case rec.reported != "" || len(in.taken) > 0:
		// Ready again, or Ready taking hosts from Revisions (once per
		// distinct list: the Revisions' owners learn where their host went)
		evType = corev1.EventTypeNormal
	}
	if ready.Status != metav1.ConditionUnknown {
		rec.reported = report
	}
	write := fp != rec.status && fp != splitStatusFingerprint(s.Status)
	if !write {
		rec.status = fp
	}
	sr.mu.Unlock()

	if evType != "" {
		p.recorder.Event(splitRef(s), evType, ready.Reason, ready.Message)
		if evType == corev1.EventTypeWarning {
			p.log.Warn("RevisionSplit not ready", zap.String("split", key.String()),
				zap.String("reason", ready.Reason), zap.String("message", ready.Message))
		}
	}
	if !write {
		return nil
	}
	if err := p.patchSplitStatus(ctx, key, status); err != nil {
		p.metrics.splitStatusPatches.WithLabelValues("error").Inc()
		return err
	}
	p.metrics.splitStatusPatches.WithLabelValues("ok").Inc()
	sr.mu.Lock()
	if rec := sr.recs[key]; rec != nil {
		rec.status = fp
	}
	sr.mu.Unlock()
	return nil
}

// setSplitReasonLocked moves key to reason ("" once it is gone) in the
// thaw_kube_revisionsplits gauge. Call with splits.mu held.
func (p *Platform) setSplitReasonLocked(key revision.Key, reason string) {
	sr := p.splits.Load()
	old := sr.reasons[key]
	if old == reason {
		return
	}
	if old != "" {
		p.metrics.splits.WithLabelValues(old).Dec()
	}
	if reason == "" {
		delete(sr.reasons, key)
		return
	}
	p.metrics.splits.WithLabelValues(reason).Inc()
	sr.reasons[key] = reason
}

// splitRef is the Event reference of a RevisionSplit.
func splitRef(s *v1alpha1.RevisionSplit) *corev1.ObjectReference {
	return &corev1.ObjectReference{
		Kind: v1alpha1.RevisionSplitKind, APIVersion: v1alpha1.SchemeGroupVersion.String(),
		Namespace: s.Namespace, Name: s.Name, UID: s.UID, ResourceVersion: s.ResourceVersion,
	}
}

// patchSplitStatus writes a RevisionSplit's status through the status
// subresource: a JSON merge patch of .status (thaw is its only writer;
// status.traffic is replaced whole, and removed when empty).
func (p *Platform) patchSplitStatus(ctx context.Context, key revision.Key, st v1alpha1.RevisionSplitStatus) error {
	var remove []string
	if len(st.Traffic) == 0 {
		remove = append(remove, "traffic")
	}
	if len(st.Hosts) == 0 {
		remove = append(remove, "hosts")
	}
	return p.patchStatusSubresource(ctx, v1alpha1.RevisionSplitsResource, v1alpha1.RevisionSplitKind, key, st, remove...)
}
