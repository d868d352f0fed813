package kube

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"go.uber.org/zap"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
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

// optional reports whether the optional resource gvr (RevisionSplits,
// KEDA ScaledObjects) can be watched: the apiserver serves it
// (discovery) and thaw may list it in its namespace scope (one list of
// one item). When it is served but the list fails (RBAC narrowed, an
// older ClusterRole), it logs why and returns false: an informer thaw may
// not list would never sync, and Run would wait for it forever.
func (p *Platform) optional(ctx context.Context, gvr schema.GroupVersionResource) bool {
	if p.opts.Discovery == nil || p.opts.Dynamic == nil {
		return false
	}
	list, err := p.opts.Discovery.ServerResourcesForGroupVersion(gvr.GroupVersion().String())
	if err != nil || !slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == gvr.Resource }) {
		return false
	}
	if _, err := p.opts.Dynamic.Resource(gvr).Namespace(p.opts.Namespace).List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
		p.log.Warn("served but not listable: not watched (grant list and watch, see manifests/base/rbac.yaml)",
			zap.String("resource", gvr.String()), zap.Error(err))
		return false
	}
	return true
}

// startSplits sets up the RevisionSplit informer (not started) when
// Revisions are watched and the CRD is served and listable; both results are nil
// otherwise (an older install without the RevisionSplit CRD keeps
// working; discoverSplits picks the CRD up when it is installed later).
func (p *Platform) startSplits(ctx context.Context) (dynamicinformer.DynamicSharedInformerFactory, cache.SharedIndexInformer, error) {
	if p.revisions == nil || !p.optional(ctx, v1alpha1.RevisionSplitsResource) {
		p.log.Info("RevisionSplit CRD not served or Revisions off: RevisionSplits not watched yet")
		return nil, nil, nil
	}
	factory, inf, sr, err := p.newSplitInformer()
	if err != nil {
		return nil, nil, err
	}
	p.splits.Store(sr)
	return factory, inf, nil
}

// newSplitInformer builds the RevisionSplit informer (not started), its
// reconciler, and the handler that queues a changed split for status and
// feeds it to the registry (feedSplit).
func (p *Platform) newSplitInformer() (dynamicinformer.DynamicSharedInformerFactory, cache.SharedIndexInformer, *splitReconciler, error) {
	factory := dynamicinformer.NewFilteredDynamicSharedInformerFactory(p.opts.Dynamic, 0, p.opts.Namespace, nil)
	inf := factory.ForResource(v1alpha1.RevisionSplitsResource).Informer()
	if err := inf.SetTransform(splitTransform); err != nil {
		return nil, nil, nil, fmt.Errorf("kube: RevisionSplit transform: %w", err)
	}
	if err := inf.AddIndexers(cache.Indexers{splitMemberIndex: indexBySplitMember}); err != nil {
		return nil, nil, nil, fmt.Errorf("kube: RevisionSplit index: %w", err)
	}
	sr := &splitReconciler{
		cache: inf.GetIndexer(), recs: map[revision.Key]*splitRecord{}, reasons: map[revision.Key]string{},
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[revision.Key](),
			workqueue.TypedRateLimitingQueueConfig[revision.Key]{Name: "thaw-kube-splits"}),
	}
	onSplit := func(obj any, deleted bool) {
		if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			if ns, name, err := cache.SplitMetaNamespaceKey(key); err == nil {
				k := revision.Key{Namespace: ns, Name: name}
				p.feedSplit(k, obj, deleted)
				sr.queue.Add(k)
			}
		}
	}
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { onSplit(obj, false) }, UpdateFunc: func(_, obj any) { onSplit(obj, false) },
		DeleteFunc: func(obj any) { onSplit(obj, true) },
	})
	if err != nil {
		return nil, nil, nil, fmt.Errorf("kube: RevisionSplit handler: %w", err)
	}
	return factory, inf, sr, nil
}

// enqueueAllSplits queues every cached RevisionSplit (after the initial
// sync and on becoming leader, when what was reported is forgotten).
func (p *Platform) enqueueAllSplits(forget bool) {
	sr := p.splits.Load()
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
	sr := p.splits.Load()
	if sr == nil {
		return
	}
	fleetSplitsChanged(sr, prev, cur)
	byHost := splitsByHost(cur)
	for key := range cur.Changes(prev) {
		if len(byHost) > 0 {
			queueHostSplits(sr, byHost, prev.Get(key), cur.Get(key))
		}
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
