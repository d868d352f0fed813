package kube

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	"github.com/thaw-dev/thaw/api/v1alpha1"
	"github.com/thaw-dev/thaw/revision"
)

// ErrScaleTarget marks a Revision whose scale target cannot be used: an
// unknown kind, an object that does not exist or has no /scale
// subresource, a selector that selects nothing or everything, or a target
// another Revision already scales.
var ErrScaleTarget = errors.New("scale target unusable")

// crdState is what the platform remembers of a Revision beyond trackedTarget:
// its scale target as last read through /scale. Guarded by Platform.mu.
type crdState struct {
	uid        string
	generation int64
	target     targetKey
	gvr        schema.GroupVersionResource
	// selector is the target's pod selector from /scale status.selector
	// (nil until read, or when unusable); selectorText as written.
	selector     labels.Selector
	selectorText string
	// fetched is when /scale was last read; fetchedGen the Revision
	// generation it was read for.
	fetched    time.Time
	fetchedGen int64
	// targetErr is why the target is unusable (wraps ErrScaleTarget), or
	// nil.
	targetErr error
	// status is the fingerprint of the status last written (see
	// statusFingerprint).
	status string
	// readyEvent is the Ready condition (reason and message) last
	// recorded as an Event by readyEvent ("" while Ready has a reason
	// that records none).
	readyEvent string
}

// revisionRef is the Event reference of a Revision.
func revisionRef(r *v1alpha1.Revision) *corev1.ObjectReference {
	return &corev1.ObjectReference{
		Kind: v1alpha1.RevisionKind, APIVersion: v1alpha1.SchemeGroupVersion.String(),
		Namespace: r.Namespace, Name: r.Name, UID: r.UID, ResourceVersion: r.ResourceVersion,
	}
}

// reconcileRevision brings the registry in line with one Revision: its
// spec translated by specFromRevision, its target's replicas and selector
// read through /scale (when never read, when the Revision changed, or when
// older than ScaleRefresh), and its backends from the pods of its
// namespace the selector matches. An invalid Revision is published as
// invalid with an Event and a metric; nothing else is affected.
func (p *Platform) reconcileRevision(ctx context.Context, key revision.Key, r *v1alpha1.Revision) {
	if r.DeletionTimestamp != nil {
		p.forget(key)
		return
	}
	now := p.opts.Clock.Now()
	target := targetOf(r)
	// An annotated workload of the Revision's own name shares its key:
	// the Revision wins.
	if d, s, err := p.lookup(key); err == nil {
		for _, w := range []*workload{candidate(d), candidate(s)} {
			if w != nil {
				p.reportIgnored(key, w, key.String(), "has the name of")
			}
		}
	}
	spec, perr := specFromRevision(p.opts.Defaults, p.opts.Limits, r)
	if msg, bad := r.Annotations[annotationDecodeError]; bad {
		perr = errors.Join(perr, &revision.FieldError{Field: "spec", Value: "", Allowed: "an object matching the v1alpha1 schema: " + msg})
	}

	p.mu.Lock()
	st := p.stateLocked(key)
	if st.crd == nil || st.crd.uid != string(r.UID) {
		st.crd = &crdState{uid: string(r.UID)}
		st.pending = nil
	}
	cs := st.crd
	st.kind, st.ref, st.source = Kind(target.kind), revisionRef(r), sourceRevision
	cs.generation = r.Generation
	refetch := cs.fetched.IsZero() || cs.fetchedGen != r.Generation || cs.target != target ||
		now.Sub(cs.fetched) >= p.opts.ScaleRefresh || cs.targetErr != nil
	cs.target = target
	p.mu.Unlock()

	var terr error
	switch owners := p.revisionsTargeting(target); {
	case len(owners) > 0 && owners[0].Name != key.Name:
		terr = errors.Join(ErrScaleTarget, &revision.FieldError{Field: "spec.scaleTargetRef", Value: target.String(),
			Allowed: fmt.Sprintf("a target no other Revision scales (Revision %s, created first, scales it)", owners[0].Name)})
	case refetch:
		terr = p.fetchTarget(ctx, key, r, now)
	default:
		p.mu.Lock()
		terr = cs.targetErr
		p.mu.Unlock()
	}
	if terr != nil {
		perr = errors.Join(perr, terr)
	}
	if err := p.otherAutoscaler(target, "spec.scaleTargetRef"); err != nil {
		perr = errors.Join(perr, err)
	}

	p.mu.Lock()
	// Only a valid revision claims its hosts; losing one makes it invalid.
	var affected []revision.Key
	if perr == nil {
		affected = p.hosts.set(key, r.CreationTimestamp.Time, spec.Hosts, spec.TrafficPercent != nil)
		perr = p.hosts.conflicts(key)
	} else {
		affected = p.hosts.remove(key)
	}
	sel := cs.selector
	p.setSelectorLocked(key, sel)
	p.mu.Unlock()
	p.enqueue(affected)
	if perr != nil {
		p.publishInvalid(key, perr)
		return
	}
	p.mu.Lock()
	p.setInvalidLocked(st, nil)
	st.reportedInvalid = ""
	p.mu.Unlock()

	p.publishBackends(key, st, spec, sel, cache.NamespaceIndex, key.Namespace)
}

// fetchTarget reads the Revision's scale target through /scale and records
// its replicas and selector. The error (wrapping ErrScaleTarget) says why
// the target is unusable; transient API errors keep the last good view.
func (p *Platform) fetchTarget(ctx context.Context, key revision.Key, r *v1alpha1.Revision, now time.Time) error {
	ref := r.Spec.ScaleTargetRef
	field := func(allowed string) error {
		return errors.Join(ErrScaleTarget, &revision.FieldError{Field: "spec.scaleTargetRef", Value: ref.APIVersion + " " + ref.Kind + " " + ref.Name, Allowed: allowed})
	}
	var terr error
	var got *autoscalingv1.Scale
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	var gvr schema.GroupVersionResource
	if err != nil {
		terr = field("an apiVersion such as apps/v1")
	} else if m, merr := p.opts.Mapper.RESTMapping(schema.GroupKind{Group: gv.Group, Kind: ref.Kind}, gv.Version); merr != nil {
		terr = field("a kind the apiserver serves: " + merr.Error())
	} else {
		gvr = m.Resource
		got, err = p.scales.Scales(key.Namespace).Get(ctx, gvr.GroupResource(), ref.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			terr = field("an existing object with a /scale subresource")
		case apierrors.IsForbidden(err):
			terr = field("a kind thaw may scale (RBAC: get on " + gvr.Resource + "/scale): " + err.Error())
		case err != nil:
			p.log.Warn("reading scale target", zap.String("revision", key.String()), zap.Error(err))
			p.mu.Lock()
			defer p.mu.Unlock()
			if st := p.revs[key]; st != nil && st.crd != nil {
				return st.crd.targetErr
			}
			return nil
		}
	}
	var sel labels.Selector
	if terr == nil {
		if got.Status.Selector == "" {
			terr = field("a target whose /scale reports a pod selector (status.selector)")
		} else if sel, err = labels.Parse(got.Status.Selector); err != nil || sel.Empty() {
			terr = field("a target whose pod selector is valid and not empty")
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	st := p.revs[key]
	if st == nil || st.crd == nil {
		return terr
	}
	cs := st.crd
	cs.fetched, cs.fetchedGen, cs.gvr, cs.targetErr = now, r.Generation, gvr, terr
	if terr != nil {
		cs.selector, cs.selectorText = nil, ""
		return terr
	}
	cs.selector, cs.selectorText = sel, got.Status.Selector
	st.replicas = got.Spec.Replicas
	if st.pending != nil {
		rv, ok := parseRV(got.ResourceVersion)
		if (st.pending.ordered && ok && rv >= st.pending.rv) || got.Spec.Replicas == st.pending.replicas {
			st.pending = nil
		}
	}
	return nil
}

// setSelectorLocked records the pod selector of a Revision for pod events
// (nil removes it).
func (p *Platform) setSelectorLocked(key revision.Key, sel labels.Selector) {
	m := p.selectors[key.Namespace]
	if sel == nil {
		delete(m, key)
		if len(m) == 0 {
			delete(p.selectors, key.Namespace)
		}
		return
	}
	if m == nil {
		m = map[revision.Key]labels.Selector{}
		p.selectors[key.Namespace] = m
	}
	m[key] = sel
}

// publishInvalid marks a revision invalid: registry, metric (first time
// per error), log and, on the leader, one Warning Event per distinct
// message.
func (p *Platform) publishInvalid(key revision.Key, perr error) {
	p.mu.Lock()
	ev := p.markInvalidLocked(p.stateLocked(key), perr)
	p.mu.Unlock()
	p.opts.Registry.SetInvalid(key, perr)
	ev.emit(p)
}

// invalidEvent is the Warning Event markInvalidLocked decided to emit
// (ref nil: none).
type invalidEvent struct {
	ref *corev1.ObjectReference
	msg string
}

func (e invalidEvent) emit(p *Platform) {
	if e.ref != nil {
		p.recorder.Event(e.ref, corev1.EventTypeWarning, ReasonInvalidConfiguration, e.msg)
	}
}

// markInvalidLocked records perr on st: the metric and log line the first
// time this error is seen, and, on the leader, the Event to emit once per
// distinct message (emitted by the caller after unlocking).
func (p *Platform) markInvalidLocked(st *trackedTarget, perr error) invalidEvent {
	wasInvalid := st.invalid
	p.setInvalidLocked(st, perr)
	st.ready = 0
	msg := describeError(perr)
	if wasInvalid == nil || wasInvalid.Error() != perr.Error() {
		for _, f := range fieldsOf(perr) {
			p.metrics.configErrors.WithLabelValues(f).Inc()
		}
		st.log.Warn("invalid configuration", zap.Error(perr))
	}
	if !p.Leading() || st.reportedInvalid == msg {
		return invalidEvent{}
	}
	st.reportedInvalid = msg
	return invalidEvent{ref: st.ref, msg: msg}
}
