package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/thaw-dev/thaw/api/v1alpha1"
	"github.com/thaw-dev/thaw/revision"
)

// splitMemberIndex indexes RevisionSplits by the revision keys
// ("namespace/name") their traffic entries name, so a revision that
// changes finds the splits to report again.
const splitMemberIndex = "thaw-split-member"

func indexBySplitMember(obj any) ([]string, error) {
	s, ok := obj.(*v1alpha1.RevisionSplit)
	if !ok {
		return nil, nil
	}
	out := make([]string, 0, len(s.Spec.Traffic))
	for _, t := range s.Spec.Traffic {
		out = append(out, s.Namespace+"/"+t.RevisionName)
	}
	return out, nil
}

// splitTransform converts the dynamic client's unstructured objects into
// typed RevisionSplits; one that does not convert keeps its identity and
// the error (annotationDecodeError) and is reported as InvalidSplit.
func splitTransform(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil
	}
	s := &v1alpha1.RevisionSplit{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.UnstructuredContent(), s); err != nil {
		return &v1alpha1.RevisionSplit{ObjectMeta: metav1.ObjectMeta{
			Name: u.GetName(), Namespace: u.GetNamespace(), UID: u.GetUID(), ResourceVersion: u.GetResourceVersion(),
			Generation: u.GetGeneration(), DeletionTimestamp: u.GetDeletionTimestamp(),
			Annotations: map[string]string{annotationDecodeError: err.Error()},
		}}, nil
	}
	s.ManagedFields = nil
	return s, nil
}

var _ cache.TransformFunc = splitTransform

// splitRecord is what the leader remembers of a RevisionSplit: the
// fingerprint of the status it last wrote and the Ready condition it last
// reported in an Event ("" after a leadership change).
type splitRecord struct {
	status, reported string
}

// splitReconciler reports RevisionSplits: status (conditions,
// observedGeneration, status.traffic) and Events, from the registry's
// view of the Revisions each split names. One goroutine (Platform.Run)
// reconciles from its queue; only the leader writes.
type splitReconciler struct {
	cache cache.Indexer
	queue workqueue.TypedRateLimitingInterface[revision.Key]
	mu    sync.Mutex
	recs  map[revision.Key]*splitRecord
	// reasons: every cached split's Ready reason, on every replica (the
	// thaw_kube_revisionsplits gauge).
	reasons map[revision.Key]string
}

// splitsServed reports whether the apiserver serves revisionsplits.thaw.dev.
func (p *Platform) splitsServed() bool {
	if p.opts.Discovery == nil {
		return false
	}
	list, err := p.opts.Discovery.ServerResourcesForGroupVersion(v1alpha1.SchemeGroupVersion.String())
	if err != nil {
		return false
	}
	for _, r := range list.APIResources {
		if r.Name == v1alpha1.RevisionSplitsResource.Resource {
			return true
		}
	}
	return false
}

// startSplits sets up the RevisionSplit informer (not started) when
// Revisions are watched and the CRD is served; both results are nil
// otherwise (an older install without the RevisionSplit CRD keeps
// working; installing it later needs a restart).
func (p *Platform) startSplits() (dynamicinformer.DynamicSharedInformerFactory, cache.SharedIndexInformer, error) {
	if p.revisions == nil || !p.splitsServed() {
		p.log.Info("RevisionSplit CRD not served or Revisions off: RevisionSplit status is not written")
		return nil, nil, nil
	}
	factory := dynamicinformer.NewFilteredDynamicSharedInformerFactory(p.opts.Dynamic, 0, p.opts.Namespace, nil)
	inf := factory.ForResource(v1alpha1.RevisionSplitsResource).Informer()
	if err := inf.SetTransform(splitTransform); err != nil {
		return nil, nil, fmt.Errorf("kube: RevisionSplit transform: %w", err)
	}
	if err := inf.AddIndexers(cache.Indexers{splitMemberIndex: indexBySplitMember}); err != nil {
		return nil, nil, fmt.Errorf("kube: RevisionSplit index: %w", err)
	}
	sr := &splitReconciler{
		cache: inf.GetIndexer(), recs: map[revision.Key]*splitRecord{}, reasons: map[revision.Key]string{},
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[revision.Key](),
			workqueue.TypedRateLimitingQueueConfig[revision.Key]{Name: "thaw-kube-splits"}),
	}
	onSplit := func(obj any) {
		if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			if ns, name, err := cache.SplitMetaNamespaceKey(key); err == nil {
				sr.queue.Add(revision.Key{Namespace: ns, Name: name})
			}
		}
	}
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: onSplit, UpdateFunc: func(_, obj any) { onSplit(obj) }, DeleteFunc: onSplit,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("kube: RevisionSplit handler: %w", err)
	}
	p.splits = sr
	return factory, inf, nil
}

// enqueueAllSplits queues every cached RevisionSplit (after the initial
// sync and on becoming leader, when what was reported is forgotten).
func (p *Platform) enqueueAllSplits(forget bool) {
	sr := p.splits
	if sr == nil {
		return
	}
	if forget {
		sr.mu.Lock()
		clear(sr.recs)
		sr.mu.Unlock()
	}
	for _, k := range sr.cache.ListKeys() {
		if ns, name, err := cache.SplitMetaNamespaceKey(k); err == nil {
			sr.queue.Add(revision.Key{Namespace: ns, Name: name})
		}
	}
}

// splitsChanged queues the RevisionSplits naming a revision whose state
// (routed, invalid and why, unknown) differs between two snapshots: work
// in proportion to what changed.
func (p *Platform) splitsChanged(prev, cur *revision.Snapshot) {
	sr := p.splits
	if sr == nil {
		return
	}
	for key := range cur.Changes(prev) {
		if memberState(prev, key) == memberState(cur, key) {
			continue
		}
		objs, err := sr.cache.ByIndex(splitMemberIndex, key.String())
		if err != nil {
			continue
		}
		for _, o := range objs {
			if s, ok := o.(*v1alpha1.RevisionSplit); ok {
				sr.queue.Add(revision.Key{Namespace: s.Namespace, Name: s.Name})
			}
		}
	}
}

// memberState summarizes what a split reports of key in snap.
func memberState(snap *revision.Snapshot, key revision.Key) string {
	if snap == nil {
		return ""
	}
	if snap.Get(key) != nil {
		return "routed"
	}
	if bad, ok := snap.Invalid[key]; ok {
		return "invalid: " + bad.Error()
	}
	return ""
}

// runSplits reconciles queued RevisionSplits until the queue shuts down.
func (p *Platform) runSplits(ctx context.Context) {
	sr := p.splits
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
	sr := p.splits
	obj, ok, err := sr.cache.GetByKey(key.String())
	s, _ := obj.(*v1alpha1.RevisionSplit)
	if err != nil || !ok || s == nil || s.DeletionTimestamp != nil {
		sr.mu.Lock()
		delete(sr.recs, key)
		p.setSplitReasonLocked(key, "")
		sr.mu.Unlock()
		return nil
	}
	in := splitInput{split: s, now: p.opts.Clock.Now(), decodeErr: s.Annotations[annotationDecodeError]}
	snap := p.opts.Registry.Snapshot()
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
	case rec.reported != "":
		evType = corev1.EventTypeNormal // Ready again
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
	sr := p.splits
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
	b, err := json.Marshal(st)
	if err != nil {
		return err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	if len(st.Traffic) == 0 {
		m["traffic"] = nil
	}
	body, err := json.Marshal(map[string]any{"status": m})
	if err != nil {
		return err
	}
	_, err = p.opts.Dynamic.Resource(v1alpha1.RevisionSplitsResource).Namespace(key.Namespace).Patch(ctx, key.Name,
		types.MergePatchType, body, metav1.PatchOptions{FieldManager: FieldManager}, "status")
	if err != nil {
		return fmt.Errorf("patch RevisionSplit %s status: %w", key, err)
	}
	return nil
}
