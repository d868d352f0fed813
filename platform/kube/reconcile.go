package kube

import (
	"context"
	"errors"

	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/thaw-dev/thaw/revision"
)

// Event reasons.
const (
	ReasonInvalidConfiguration = "InvalidConfiguration"
	ReasonKeyConflict          = "KeyConflict"
	ReasonScaled               = "Scaled"
	ReasonScaleFailed          = "ScaleFailed"
	ReasonServeMode            = "ServeMode"
	ReasonProxyMode            = "ProxyMode"
	// ReasonAnnotationsIgnored: a Revision scales an annotated workload,
	// whose annotations then count for nothing.
	ReasonAnnotationsIgnored = "AnnotationsIgnored"
)

// revisionSource says where a revision's configuration comes from.
type revisionSource int

const (
	sourceAnnotations revisionSource = iota
	sourceRevision
)

var everything = labels.Everything()

func labelSet(m map[string]string) labels.Set { return labels.Set(m) }

// trackedTarget is what the platform remembers of one revision key's scale
// target (kind, reference, replicas seen and patched). Guarded by
// Platform.mu.
type trackedTarget struct {
	log  *zap.Logger
	kind Kind
	ref  *corev1.ObjectReference
	// replicas is spec.replicas as last seen in the cache; pending is a
	// value this replica patched that the cache has not shown yet.
	replicas int32
	pending  *pendingScale
	// ready is the number of backends last published.
	ready int32
	// invalid is the configuration error, or nil.
	invalid error
	// status is the thaw.dev/status annotation as last seen in the cache.
	status string
	// reportedInvalid / reportedConflict: the message last reported in an
	// Event during this leadership term, to report each problem once.
	reportedInvalid, reportedConflict string
	// reportedWake is the wake failure last reported in an Event.
	reportedWake string
	conflict     bool
	// source: annotations or a Revision; crd holds the Revision's state
	// (nil for annotated workloads).
	source revisionSource
	crd    *crdState
}

type pendingScale struct {
	replicas int32
	rv       uint64
	ordered  bool
}

// current returns the desired replica count: a patch not yet seen in the
// cache wins over the cached value.
func (st *trackedTarget) current() int32 {
	if st.pending != nil {
		return st.pending.replicas
	}
	return st.replicas
}

// lookup returns the cached workload of a kind, or nil when absent.
func (p *Platform) lookup(key revision.Key) (d, s *workload, err error) {
	dep, err := p.deployments.Deployments(key.Namespace).Get(key.Name)
	switch {
	case err == nil:
		d = fromDeployment(dep)
	case !apierrors.IsNotFound(err):
		return nil, nil, err
	}
	sts, err := p.statefuls.StatefulSets(key.Namespace).Get(key.Name)
	switch {
	case err == nil:
		s = fromStatefulSet(sts)
	case !apierrors.IsNotFound(err):
		return nil, nil, err
	}
	return d, s, nil
}

// candidate returns w when it is a live revision workload, else nil.
func candidate(w *workload) *workload {
	if w == nil || w.deleting || !isRevision(w.annotations) {
		return nil
	}
	return w
}

// reconcile brings the registry in line with the cache for one key. It is
// only called from one goroutine at a time (Run's initial pass, then the
// queue worker). A Revision of the key wins over an annotated workload of
// the same name (see docs/revisions.md).
func (p *Platform) reconcile(ctx context.Context, key revision.Key) {
	if r := p.getRevision(key); r != nil {
		p.reconcileRevision(ctx, key, r)
		return
	}
	p.mu.Lock()
	if st := p.revs[key]; st != nil && st.crd != nil {
		// The Revision is gone: start afresh from the annotations.
		p.mu.Unlock()
		p.forget(key)
	} else {
		p.mu.Unlock()
	}
	d, s, err := p.lookup(key)
	if err != nil {
		p.log.Error("cache lookup", zap.String("revision", key.String()), zap.Error(err))
		return
	}
	d, s = p.unlessReferenced(key, candidate(d)), p.unlessReferenced(key, candidate(s))
	w, loser := pickWinner(d, s)
	if w == nil {
		p.forget(key)
		return
	}
	spec, perr := parseSpec(p.opts.Defaults, p.opts.Limits, w.annotations, w.template)
	sel, serr := selectorOf(w.selector)
	if serr != nil {
		perr = errors.Join(perr, serr)
	}
	if err := p.otherAutoscaler(targetKey{namespace: w.namespace, group: "apps", kind: string(w.kind), name: w.name}, "workload"); err != nil {
		perr = errors.Join(perr, err)
	}

	p.mu.Lock()
	st := p.stateLocked(key)
	if seen := w.annotations[AnnotationStatus]; seen != st.status || st.ref == nil {
		p.statusSeen[key] = struct{}{} // new, or edited: the status loop compares
	}
	st.kind, st.ref, st.status, st.source = w.kind, w.ref(), w.annotations[AnnotationStatus], sourceAnnotations
	st.replicas = w.replicas
	if st.pending != nil {
		rv, ok := parseRV(w.rv)
		if (st.pending.ordered && ok && rv >= st.pending.rv) || w.replicas == st.pending.replicas {
			st.pending = nil
		}
	}
	p.setConflictLocked(st, loser != nil)
	// Only a valid revision claims its hosts; losing one makes it invalid.
	var affected []revision.Key
	if perr == nil {
		affected = p.hosts.set(key, w.created.Time, spec.Hosts, spec.TrafficPercent != nil)
		perr = p.hosts.conflicts(key)
	} else {
		affected = p.hosts.remove(key)
	}
	var reportConflict *workload
	if loser != nil && p.Leading() && st.reportedConflict != string(loser.uid) {
		st.reportedConflict = string(loser.uid)
		reportConflict = loser
	}
	if perr != nil {
		ev := p.markInvalidLocked(st, perr)
		p.mu.Unlock()
		p.enqueue(affected)
		p.opts.Registry.SetInvalid(key, perr)
		ev.emit(p)
		p.reportConflict(key, w, reportConflict)
		return
	}
	p.setInvalidLocked(st, nil)
	st.reportedInvalid = ""
	p.mu.Unlock()
	p.enqueue(affected)

	if !p.publishBackends(key, st, spec, sel, ownerIndex, ownerIndexValue(w.kind, key)) {
		return
	}
	p.reportConflict(key, w, reportConflict)
}

// publishBackends lists the pods of the pod informer's index (name, value)
// that sel matches, records how many are ready backends and publishes the
// backends and spec of key. It returns false (and logs) when the index
// cannot be read; nothing is published then.
func (p *Platform) publishBackends(key revision.Key, st *trackedTarget, spec revision.Spec, sel labels.Selector, index, value string) bool {
	objs, err := p.pods.ByIndex(index, value)
	if err != nil {
		p.log.Error("list pods", zap.String("revision", key.String()), zap.Error(err))
		return false
	}
	pods := make([]*corev1.Pod, 0, len(objs))
	for _, o := range objs {
		if pod, ok := o.(*corev1.Pod); ok && sel.Matches(labelSet(pod.Labels)) {
			pods = append(pods, pod)
		}
	}
	backends := backendsFor(pods, spec.Port)
	p.mu.Lock()
	st.ready = int32(len(backends))
	p.mu.Unlock()
	p.opts.Registry.SetBackends(key, backends)
	p.opts.Registry.Upsert(key, spec)
	p.setWakeFailure(key, st, wakeFailureFor(pods, len(backends)))
	return true
}

// unlessReferenced returns w, or nil when a Revision scales w: the
// Revision is then the only source of truth and w's thaw annotations are
// ignored, with one AnnotationsIgnored Warning Event per leadership term.
func (p *Platform) unlessReferenced(key revision.Key, w *workload) *workload {
	if w == nil || p.revisions == nil {
		return w
	}
	revs := p.revisionsTargeting(workloadTarget(w.kind, key))
	if len(revs) == 0 {
		return w
	}
	p.reportIgnored(key, w, revs[0].Namespace+"/"+revs[0].Name, "scales")
	return nil
}

// reportIgnored records, once per leadership term, that an annotated
// workload's annotations are ignored because of Revision by (which
// "scales" it or "has its name"): a Warning Event on the workload and a
// log line.
func (p *Platform) reportIgnored(key revision.Key, w *workload, by, why string) {
	p.mu.Lock()
	report := p.Leading() && p.ignored[key] != by
	if report {
		p.ignored[key] = by
	}
	p.mu.Unlock()
	if !report {
		return
	}
	p.log.Warn("annotations ignored: a Revision "+why+" this workload",
		zap.String("workload", key.String()), zap.String("kind", string(w.kind)), zap.String("by", by))
	p.recorder.Eventf(w.ref(), corev1.EventTypeWarning, ReasonAnnotationsIgnored,
		"Revision %s %s this %s: its %s and autoscaling annotations are ignored (remove them, or the Revision)", by, why, w.kind, AnnotationHosts)
}

// selectorOf converts a workload selector; an empty selector is rejected
// (it would select every pod of the namespace).
func selectorOf(ls *metav1.LabelSelector) (labels.Selector, error) {
	if ls == nil || (len(ls.MatchLabels) == 0 && len(ls.MatchExpressions) == 0) {
		return nil, &revision.FieldError{Field: "spec.selector", Value: "", Allowed: "a non-empty label selector"}
	}
	sel, err := metav1.LabelSelectorAsSelector(ls)
	if err != nil {
		return nil, &revision.FieldError{Field: "spec.selector", Value: ls.String(), Allowed: "a valid label selector: " + err.Error()}
	}
	return sel, nil
}

func (p *Platform) reportConflict(key revision.Key, winner, loser *workload) {
	if loser == nil {
		return
	}
	p.recorder.Eventf(loser.ref(), corev1.EventTypeWarning, ReasonKeyConflict,
		"%s %s also carries %s and owns revision %s (created first); this %s is ignored while it exists",
		winner.kind, winner.name, AnnotationHosts, key, loser.kind)
}

// stateLocked returns the state of key, creating it.
func (p *Platform) stateLocked(key revision.Key) *trackedTarget {
	st := p.revs[key]
	if st == nil {
		st = &trackedTarget{log: p.log.WithLazy(zap.String("revision", key.String()))}
		p.revs[key] = st
		p.metrics.revisions.WithLabelValues("valid").Inc()
	}
	return st
}

func (p *Platform) setInvalidLocked(st *trackedTarget, err error) {
	switch {
	case st.invalid == nil && err != nil:
		p.invalid++
		p.metrics.revisions.WithLabelValues("valid").Dec()
		p.metrics.revisions.WithLabelValues("invalid").Inc()
	case st.invalid != nil && err == nil:
		p.invalid--
		p.metrics.revisions.WithLabelValues("invalid").Dec()
		p.metrics.revisions.WithLabelValues("valid").Inc()
	}
	st.invalid = err
}

func (p *Platform) setConflictLocked(st *trackedTarget, conflict bool) {
	if st.conflict == conflict {
		return
	}
	st.conflict = conflict
	if conflict {
		p.conflicts++
	} else {
		p.conflicts--
		st.reportedConflict = ""
	}
	p.metrics.keyConflicts.Set(float64(p.conflicts))
}

// forget removes a revision whose workload is gone (or lost its
// annotation, or is being deleted).
func (p *Platform) forget(key revision.Key) {
	p.mu.Lock()
	affected := p.hosts.remove(key)
	p.setSelectorLocked(key, nil)
	st := p.revs[key]
	if st != nil {
		p.setInvalidLocked(st, nil)
		p.setConflictLocked(st, false)
		p.metrics.revisions.WithLabelValues("valid").Dec()
		delete(p.revs, key)
		st.log.Info("revision removed")
	}
	p.mu.Unlock()
	p.enqueue(affected)
	p.opts.Registry.Delete(key)
}

// enqueue queues revisions to reconcile again (their host ownership may
// have changed).
func (p *Platform) enqueue(keys []revision.Key) {
	for _, k := range keys {
		p.queue.Add(k)
	}
}
