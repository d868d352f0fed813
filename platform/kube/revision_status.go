package kube

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.uber.org/zap"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/thaw-dev/thaw/api/v1alpha1"
	"github.com/thaw-dev/thaw/revision"
)

// statusInput is what a Revision's status is computed from.
type statusInput struct {
	generation int64
	// invalid is the configuration error of an invalid revision.
	invalid error
	// rev is the published revision (nil when invalid or unpublished).
	rev *revision.Revision
	// replicas is the target's spec.replicas as thaw last saw or set it.
	replicas int32
	selector string
	prior    []metav1.Condition
	now      time.Time
	// takenBy says which hosts of the revision a routed fleet split
	// takes ("host, host (RevisionSplit ns/name)", hostsTakenBySplits);
	// empty when none.
	takenBy []string
	// notRouted is why the Envoy translation leaves the revision out
	// (RouteVerdicts.SkipReason); nil when it is routed.
	notRouted error
}

// maxConditionMessage bounds condition messages (the API allows 32768
// bytes).
const maxConditionMessage = 1024

// revisionStatus computes a Revision's status: Ready (routed, routed with
// hosts taken by a RevisionSplit: HostTakenBySplit, left out by the
// Envoy translation: NotRouted, or invalid),
// Active (Serving with ready pods, Waking while pods are wanted but none is
// ready, ScaledToZero when none is wanted), the mode, the autoscaler's
// desired scale and the ready pod count. Conditions keep their
// lastTransitionTime from prior while their status does not change.
func revisionStatus(in statusInput) v1alpha1.RevisionStatus {
	out := v1alpha1.RevisionStatus{ObservedGeneration: in.generation, Selector: in.selector}
	cs := newConditionSet(in.prior, in.generation, in.now)
	set := cs.setBool
	switch {
	case in.invalid != nil:
		reason := v1alpha1.ReasonInvalidConfiguration
		switch {
		case errors.Is(in.invalid, ErrOtherAutoscaler):
			reason = v1alpha1.ReasonOtherAutoscaler
		case errors.Is(in.invalid, ErrScaleTarget):
			reason = v1alpha1.ReasonScaleTargetNotFound
		}
		out.Mode = v1alpha1.ModeInvalid
		set(v1alpha1.ConditionReady, false, reason, describeError(in.invalid))
		set(v1alpha1.ConditionActive, false, reason, "not routed: the configuration is invalid")
	case in.rev != nil:
		ready := int32(len(in.rev.ReadyBackends()))
		out.Mode = in.rev.Mode.String()
		out.ActualScale = ready
		if in.rev.DesiredScale >= 0 {
			d := in.rev.DesiredScale
			out.DesiredScale = &d
		}
		switch {
		case in.notRouted != nil:
			set(v1alpha1.ConditionReady, false, v1alpha1.ReasonNotRouted,
				"the Envoy translation leaves the revision out, so thaw's Envoys do not route it: "+in.notRouted.Error())
		case len(in.takenBy) > 0:
			set(v1alpha1.ConditionReady, true, v1alpha1.ReasonHostTakenBySplit,
				"thaw routes the revision (through the activator while no pod is ready), but not on these hosts it lists: "+
					"a RevisionSplit takes them (its traffic list decides there; this Revision's own route and traffic.percent do not apply): "+
					strings.Join(in.takenBy, "; "))
		default:
			set(v1alpha1.ConditionReady, true, v1alpha1.ReasonRouted,
				"thaw routes the revision (through the activator while no pod is ready)")
		}
		switch {
		case ready > 0:
			set(v1alpha1.ConditionActive, true, v1alpha1.ReasonServing, fmt.Sprintf("%d ready pods", ready))
		case in.rev.WakeFailure != nil:
			// The reason is the kubelet's or scheduler's own word
			// (ImagePullBackOff, CrashLoopBackOff, Unschedulable, ...).
			until := "until a pod starts again"
			if in.rev.WakeFailure.Reason == revision.WakeActivationTimeout {
				// Mode control's verdict (no pod ready in time).
				until = "until the revision is back at zero (the next request wakes it again) or a pod is ready"
			}
			set(v1alpha1.ConditionActive, false, in.rev.WakeFailure.Reason,
				"waking failed: "+in.rev.WakeFailure.String()+"; requests are answered 503 "+until)
		case in.rev.DesiredScale > 0 || (in.rev.DesiredScale < 0 && in.replicas > 0):
			set(v1alpha1.ConditionActive, false, v1alpha1.ReasonWaking,
				fmt.Sprintf("waiting for a ready pod (%d replicas wanted)", max(in.rev.DesiredScale, in.replicas)))
		default:
			set(v1alpha1.ConditionActive, false, v1alpha1.ReasonScaledToZero, "no pods; the first request wakes the revision")
		}
	default:
		out.Mode = ""
		set(v1alpha1.ConditionReady, false, v1alpha1.ReasonPending, "not published yet")
	}
	out.Conditions = cs.conds
	return out
}

// statusFingerprint identifies a status apart from transition times, to
// patch only what changed.
func statusFingerprint(s v1alpha1.RevisionStatus) string {
	s.Conditions = withoutTransitionTimes(s.Conditions)
	return jsonFingerprint(s)
}

// revisionStatusPatch is one pending status write.
type revisionStatusPatch struct {
	key         revision.Key
	status      v1alpha1.RevisionStatus
	fingerprint string
	log         *zap.Logger
}

// revisionStatusesLocked lists the Revisions whose computed status differs
// from the one last written, and the Events due (readyEvent), to be
// recorded after p.mu is released. Called with p.mu held.
func (p *Platform) revisionStatusesLocked(snap *revision.Snapshot, now time.Time) ([]revisionStatusPatch, []revisionEvent) {
	var todo []revisionStatusPatch
	var events []revisionEvent
	byHost := splitsByHost(snap)
	for key, st := range p.revs {
		if st.crd == nil {
			continue
		}
		r := p.getRevision(key)
		if r == nil {
			continue
		}
		in := statusInput{generation: st.crd.generation, invalid: st.invalid, replicas: st.current(),
			selector: st.crd.selectorText, prior: r.Status.Conditions, now: now}
		if st.invalid != nil {
			if _, published := snap.Invalid[key]; !published {
				continue
			}
		} else if in.rev = snap.Get(key); in.rev == nil {
			continue
		}
		in.takenBy = hostsTakenBySplits(byHost, in.rev)
		if in.rev != nil {
			in.notRouted = p.revisionVerdict(key)
		}
		s := revisionStatus(in)
		if ev, ok := readyEvent(st.crd, r, s); ok {
			events = append(events, ev)
		}
		fp := statusFingerprint(s)
		if fp == st.crd.status || fp == statusFingerprint(r.Status) {
			st.crd.status = fp
			continue
		}
		todo = append(todo, revisionStatusPatch{key: key, status: s, fingerprint: fp, log: st.log})
	}
	return todo, events
}

// patchRevisionStatus writes a Revision's status through the status
// subresource (a JSON merge patch of .status; thaw is its only writer).
func (p *Platform) patchRevisionStatus(ctx context.Context, sp revisionStatusPatch) error {
	var remove []string
	if sp.status.DesiredScale == nil {
		remove = append(remove, "desiredScale")
	}
	if sp.status.Selector == "" {
		remove = append(remove, "selector")
	}
	return p.patchStatusSubresource(ctx, v1alpha1.RevisionsResource, "Revision", sp.key, sp.status, remove...)
}
