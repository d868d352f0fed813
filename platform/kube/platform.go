package kube

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	appslisters "k8s.io/client-go/listers/apps/v1"
	"k8s.io/client-go/scale"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	"github.com/thaw-dev/thaw/autoscaler"
	"github.com/thaw-dev/thaw/revision"
)

// Platform publishes revisions from Revision objects (thaw.dev/v1alpha1,
// see Options.Revisions) and from annotated Deployments and StatefulSets,
// with their ready Pods, into a revision.Registry, and scales them through
// the /scale subresource. It implements autoscaler.ScaleTarget and the Platform
// interface of internal/app.
//
// Every thaw replica runs the informers and feeds its own registry; only the
// leader (see Options.Elected and SetLeader) writes to the cluster: scale
// patches, Events, Revision status and the thaw.dev/status annotation.
type Platform struct {
	opts    Options
	log     *zap.Logger
	scales  scale.ScalesGetter
	metrics *metrics
	leading atomic.Bool

	// Set by Run before the informers start.
	recorder    record.EventRecorder
	deployments appslisters.DeploymentLister
	statefuls   appslisters.StatefulSetLister
	pods        cache.Indexer
	// revisions caches *v1alpha1.Revision; nil when Revisions are off.
	revisions cache.Indexer
	// hpas caches HorizontalPodAutoscalers indexed by scale target
	// (autoscalers.go).
	hpas cache.Indexer
	// scaledObjects caches KEDA ScaledObjects (*scaledObject) indexed by
	// scale target; nil when KEDA's CRD is not served (keda.go).
	scaledObjects cache.Indexer
	// splits reports RevisionSplits; nil when they are not watched
	// (splits.go).
	splits atomic.Pointer[splitReconciler]
	// routes is the Envoy translation's verdict on fleet splits
	// (SetRouteVerdicts before Run; nil: none).
	routes  RouteVerdicts
	queue   workqueue.TypedInterface[revision.Key]
	started atomic.Bool
	// synced is set once the informers synced and the queue runs.
	synced atomic.Bool

	mu    sync.Mutex
	revs  map[revision.Key]*trackedTarget
	hosts *hostIndex
	// selectors: namespace → Revision key → its target's pod selector,
	// so a pod event finds the Revisions selecting the pod.
	selectors map[string]map[revision.Key]labels.Selector
	// ignored: annotated workloads (by key) whose annotations a Revision
	// overrides → the last reported Revision, to warn once per term.
	ignored   map[revision.Key]string
	invalid   int
	conflicts int
	// statusSeen: workloads whose thaw.dev/status annotation, as seen in
	// the cache, changed since the status loop last looked (statuses.go).
	statusSeen map[revision.Key]struct{}
	// statuses is owned by the report loop's goroutine.
	statuses statusCache
}

var _ autoscaler.ScaleTarget = (*Platform)(nil)

// New returns a Platform; it starts nothing until Run. Errors: missing
// Client, Registry or RESTConfig/Scales, an unparsable label selector, a
// failure building the scale client, or a metric registration conflict.
func New(opts Options) (*Platform, error) {
	if err := opts.setDefaults(); err != nil {
		return nil, err
	}
	m, err := newMetrics(opts.Registerer)
	if err != nil {
		return nil, fmt.Errorf("kube: metrics: %w", err)
	}
	p := &Platform{
		opts: opts, log: opts.Logger, scales: opts.Scales, metrics: m,
		revs: map[revision.Key]*trackedTarget{}, hosts: newHostIndex(), statusSeen: map[revision.Key]struct{}{},
		selectors: map[string]map[revision.Key]labels.Selector{}, ignored: map[revision.Key]string{},
	}
	p.setLeading(!opts.Elected)
	return p, nil
}

// SetLeader tells the platform whether this replica leads (only meaningful
// with Options.Elected). On becoming leader it re-reports configuration
// errors (the previous leader's Events may be old) and refreshes statuses.
func (p *Platform) SetLeader(leading bool) {
	if !p.opts.Elected {
		return
	}
	if p.setLeading(leading) && leading && p.synced.Load() {
		p.mu.Lock()
		for _, st := range p.revs {
			st.reportedInvalid, st.reportedConflict, st.reportedWake = "", "", ""
			if st.crd != nil {
				st.crd.status = "" // the previous leader may have written another
			}
		}
		clear(p.ignored)
		p.mu.Unlock()
		p.enqueueAll()
		p.enqueueAllSplits(true)
	}
}

// Leading reports whether this replica writes to the cluster.
func (p *Platform) Leading() bool { return p.leading.Load() }

// setLeading records leadership and reports whether it changed.
func (p *Platform) setLeading(v bool) bool {
	changed := p.leading.Swap(v) != v
	if v {
		p.metrics.leader.Set(1)
	} else {
		p.metrics.leader.Set(0)
	}
	if changed {
		p.log.Info("leadership", zap.Bool("leading", v))
	}
	return changed
}

// Run starts the informers (scoped by Namespace, LabelSelector and
// PodLabelSelector, with a transform keeping only used fields), waits for
// their initial listing, publishes every revision with its backends, calls
// Registry.SetSynced, and then follows changes until ctx ends. It returns
// nil after stopping what it started, or an error when called twice or when
// ctx ends before the caches synced (then the registry is never marked
// synced).
func (p *Platform) Run(ctx context.Context) error {
	if p.started.Swap(true) {
		return errors.New("kube: Run called twice")
	}
	var broadcaster record.EventBroadcaster
	p.recorder = p.opts.Recorder
	if p.recorder == nil {
		broadcaster = record.NewBroadcaster(record.WithContext(ctx))
		broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: p.opts.Client.CoreV1().Events("")})
		p.recorder = broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: EventComponent})
		defer broadcaster.Shutdown()
	}

	workloads := informers.NewSharedInformerFactoryWithOptions(p.opts.Client, 0,
		informers.WithNamespace(p.opts.Namespace), informers.WithTransform(transform),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = p.opts.LabelSelector }))
	podFactory := informers.NewSharedInformerFactoryWithOptions(p.opts.Client, 0,
		informers.WithNamespace(p.opts.Namespace), informers.WithTransform(transform),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = p.opts.PodLabelSelector }))
	dInf := workloads.Apps().V1().Deployments()
	sInf := workloads.Apps().V1().StatefulSets()
	pInf := podFactory.Core().V1().Pods()
	if err := pInf.Informer().AddIndexers(cache.Indexers{ownerIndex: indexByOwner}); err != nil {
		return fmt.Errorf("kube: pod index: %w", err)
	}
	p.deployments, p.statefuls, p.pods = dInf.Lister(), sInf.Lister(), pInf.Informer().GetIndexer()
	hpaFactory := informers.NewSharedInformerFactoryWithOptions(p.opts.Client, 0, informers.WithNamespace(p.opts.Namespace))
	hInf := hpaFactory.Autoscaling().V2().HorizontalPodAutoscalers()
	if err := hInf.Informer().AddIndexers(cache.Indexers{hpaTargetIndex: indexByHPATarget}); err != nil {
		return fmt.Errorf("kube: HorizontalPodAutoscaler index: %w", err)
	}
	p.hpas = hInf.Informer().GetIndexer()
	queue := workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[revision.Key]{Name: "thaw-kube"})
	p.queue = queue

	revFactory, revInf, err := p.startRevisions()
	if err != nil {
		return err
	}
	splitFactory, splitInf, err := p.startSplits(ctx)
	if err != nil {
		return err
	}
	kedaFactory, kedaInf, err := p.startScaledObjects(ctx)
	if err != nil {
		return err
	}
	workloadHandler := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { p.onWorkload(nil, obj) },
		UpdateFunc: p.onWorkload,
		DeleteFunc: func(obj any) { p.onWorkload(nil, obj) },
	}
	podHandler := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { p.onPod(nil, obj) },
		UpdateFunc: p.onPod,
		DeleteFunc: func(obj any) { p.onPod(nil, obj) },
	}
	for _, add := range []func() error{
		func() error { _, err := dInf.Informer().AddEventHandler(workloadHandler); return err },
		func() error { _, err := sInf.Informer().AddEventHandler(workloadHandler); return err },
		func() error { _, err := pInf.Informer().AddEventHandler(podHandler); return err },
		func() error {
			_, err := hInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
				AddFunc: func(obj any) { p.onHPA(nil, obj) }, UpdateFunc: p.onHPA, DeleteFunc: func(obj any) { p.onHPA(nil, obj) },
			})
			return err
		},
	} {
		if err := add(); err != nil {
			return fmt.Errorf("kube: informer handler: %w", err)
		}
	}

	var wg sync.WaitGroup
	defer func() {
		queue.ShutDown()
		if sr := p.splits.Load(); sr != nil && splitFactory != nil {
			sr.queue.ShutDown() // a late one (split_fleet.go) shuts down its own
		}
		wg.Wait()
		workloads.Shutdown()
		podFactory.Shutdown()
		hpaFactory.Shutdown()
		if revFactory != nil {
			revFactory.Shutdown()
		}
		if splitFactory != nil {
			splitFactory.Shutdown()
		}
		if kedaFactory != nil {
			kedaFactory.Shutdown()
		}
	}()
	workloads.Start(ctx.Done())
	podFactory.Start(ctx.Done())
	hpaFactory.Start(ctx.Done())
	synced := []cache.InformerSynced{dInf.Informer().HasSynced, sInf.Informer().HasSynced, pInf.Informer().HasSynced, hInf.Informer().HasSynced}
	if revFactory != nil {
		revFactory.Start(ctx.Done())
		synced = append(synced, revInf.HasSynced)
	}
	if splitFactory != nil {
		splitFactory.Start(ctx.Done())
		synced = append(synced, splitInf.HasSynced)
	}
	if kedaFactory != nil {
		kedaFactory.Start(ctx.Done())
		synced = append(synced, kedaInf.HasSynced)
	}
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		return fmt.Errorf("kube: waiting for informer caches: %w", context.Cause(ctx))
	}
	keys, err := p.listKeys()
	if err != nil {
		return err
	}
	for _, key := range keys {
		p.reconcile(ctx, key)
	}
	// A workload that lost a host to one reconciled after it was queued
	// again: settle those before the first snapshot is served. Bounded by
	// what is queued now.
	for n := p.queue.Len(); n > 0; n-- {
		p.processNext(ctx)
	}
	// The report loop starts from the state before SetSynced, so it sees
	// every mode flip made by those who waited for Synced.
	changed, prev := p.opts.Registry.Changed(), p.opts.Registry.Snapshot()
	p.opts.Registry.SetSynced()
	p.synced.Store(true)
	if p.opts.Elected && p.Leading() {
		// Leadership may have arrived during the initial pass: report
		// what that pass did not (reported problems are not repeated).
		p.enqueueAll()
	}
	p.log.Info("kube platform synced", zap.Int("keys", len(keys)), zap.Bool("revisionCRD", p.revisions != nil),
		zap.String("namespace", p.opts.Namespace), zap.String("selector", p.opts.LabelSelector))

	wg.Add(2)
	go func() {
		defer wg.Done()
		for p.processNext(ctx) {
		}
	}()
	if p.splits.Load() != nil {
		p.enqueueAllSplits(false)
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.runSplits(ctx)
		}()
	} else if p.revisions != nil && p.opts.SplitDiscoveryInterval > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.discoverSplits(ctx)
		}()
	}
	go func() {
		defer wg.Done()
		p.reportLoop(ctx, changed, prev)
	}()
	if p.routes != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.watchRouteVerdicts(ctx)
		}()
	}
	<-ctx.Done()
	p.log.Info("kube platform stopping")
	return nil
}

func (p *Platform) processNext(ctx context.Context) bool {
	key, quit := p.queue.Get()
	if quit {
		return false
	}
	defer p.queue.Done(key)
	p.reconcile(ctx, key)
	return true
}

// listKeys returns the keys of every cached workload (annotated or not:
// reconcile sorts them out) and Revision.
func (p *Platform) listKeys() ([]revision.Key, error) {
	var keys []revision.Key
	ds, err := p.deployments.List(everything)
	if err != nil {
		return nil, fmt.Errorf("kube: list deployments: %w", err)
	}
	for _, d := range ds {
		keys = append(keys, revision.Key{Namespace: d.Namespace, Name: d.Name})
	}
	ss, err := p.statefuls.List(everything)
	if err != nil {
		return nil, fmt.Errorf("kube: list statefulsets: %w", err)
	}
	for _, s := range ss {
		keys = append(keys, revision.Key{Namespace: s.Namespace, Name: s.Name})
	}
	return append(keys, p.revisionKeys()...), nil
}

func (p *Platform) enqueueAll() {
	keys, err := p.listKeys()
	if err != nil {
		p.log.Error("re-enqueue", zap.Error(err))
		return
	}
	for _, k := range keys {
		p.queue.Add(k)
	}
}

// onWorkload queues the workload's key and, when its spec changed
// (generation), the Revisions that scale it, marking their view of it
// stale so they read /scale again.
func (p *Platform) onWorkload(oldObj, obj any) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		return
	}
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return
	}
	p.queue.Add(revision.Key{Namespace: ns, Name: name})
	if p.revisions == nil {
		return
	}
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	o, ok := obj.(metav1.Object)
	if !ok {
		return
	}
	if old, ok := oldObj.(metav1.Object); ok && old.GetGeneration() == o.GetGeneration() {
		return
	}
	var kind Kind
	switch obj.(type) {
	case *appsv1.Deployment:
		kind = KindDeployment
	case *appsv1.StatefulSet:
		kind = KindStatefulSet
	default:
		return
	}
	revs := p.revisionsTargeting(workloadTarget(kind, revision.Key{Namespace: ns, Name: name}))
	p.mu.Lock()
	for _, r := range revs {
		if st := p.revs[revision.Key{Namespace: r.Namespace, Name: r.Name}]; st != nil && st.crd != nil {
			st.crd.fetched = time.Time{}
		}
	}
	p.mu.Unlock()
	for _, r := range revs {
		p.queue.Add(revision.Key{Namespace: r.Namespace, Name: r.Name})
	}
}

// onPod enqueues the revision whose workload owns the pod (see podOwner),
// before and after the change.
func (p *Platform) onPod(oldObj, obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	for _, o := range []any{oldObj, obj} {
		if pod, ok := o.(*corev1.Pod); ok {
			if _, key, ok := podOwner(pod); ok {
				p.queue.Add(key)
			}
			p.enqueue(p.revisionsSelecting(pod.Namespace, pod.Labels))
		}
	}
}
