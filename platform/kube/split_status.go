package kube

import (
	"errors"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/thaw-dev/thaw/api/v1alpha1"
	"github.com/thaw-dev/thaw/platform/revisionspec"
	"github.com/thaw-dev/thaw/revision"
)

// splitMember is how one traffic entry's Revision resolved: Reason is
// v1alpha1.ReasonRouted, ReasonRevisionNotFound, ReasonOtherAutoscaler,
// ReasonRevisionInvalid or ReasonPending; Detail says why when it is not
// routed.
type splitMember struct {
	Reason string
	Detail string
}

// resolveMember resolves the revision key from snap (published, or
// invalid with why) and, when snap does not know it, from whether a
// Revision object of that key exists (cached: Pending, the registry has
// not published it yet; absent: RevisionNotFound). An annotated workload
// of that key counts as the revision too: the registry knows it.
func resolveMember(snap *revision.Snapshot, key revision.Key, cached bool) splitMember {
	if snap.Get(key) != nil {
		return splitMember{Reason: v1alpha1.ReasonRouted}
	}
	if bad, ok := snap.Invalid[key]; ok {
		reason := v1alpha1.ReasonRevisionInvalid
		if errors.Is(bad, ErrOtherAutoscaler) {
			reason = v1alpha1.ReasonOtherAutoscaler
		}
		return splitMember{Reason: reason, Detail: describeError(bad)}
	}
	if cached {
		return splitMember{Reason: v1alpha1.ReasonPending, Detail: "not published by thaw yet"}
	}
	return splitMember{Reason: v1alpha1.ReasonRevisionNotFound,
		Detail: "no Revision (or annotated workload) " + key.String()}
}

// splitInput is what a RevisionSplit's status is computed from.
type splitInput struct {
	split *v1alpha1.RevisionSplit
	// members: one per spec.traffic entry, in order (unused when the split
	// breaks a rule).
	members []splitMember
	// decodeErr: the object did not decode into the v1alpha1 type.
	decodeErr string
	now       time.Time
	// fleet is the registry's split of the same key (a RevisionSplit with
	// spec.hosts, split_fleet.go), nil when none is published.
	fleet *revision.Split
	// taken: "host (namespace/name)" for each host of the split that a
	// Revision lists too (takenHosts).
	taken []string
	// routeErr is the translation's verdict when it left a Revision of
	// the split out (routeVerdict, a *translate.SplitLeftOutError), or nil.
	routeErr error
}

// splitReasonOrder ranks member reasons for the split's Ready reason: the
// first present wins (a missing Revision before a refused one).
var splitReasonOrder = []string{v1alpha1.ReasonRevisionNotFound, v1alpha1.ReasonOtherAutoscaler,
	v1alpha1.ReasonRevisionInvalid, v1alpha1.ReasonRevisionNotRouted, v1alpha1.ReasonPending}

// splitStatus computes a RevisionSplit's status: Ready True (Resolved)
// when the split keeps its rules (revisionspec.ValidateSplit) and thaw
// routes every Revision it names, else False with InvalidSplit,
// RevisionNotFound, ScaledByOtherAutoscaler, RevisionInvalid or
// RevisionNotRouted (the Envoy translation left a Revision out, the
// translation's verdict in.routeErr) (the first
// that applies, the message naming every entry at fault), or Unknown
// (Pending) while a Revision that exists is not published yet. status.traffic
// repeats each entry with its Revision's reason. The Ready condition keeps
// its lastTransitionTime from the object's prior status while its status
// does not change.
func splitStatus(in splitInput) v1alpha1.RevisionSplitStatus {
	s := in.split
	out := v1alpha1.RevisionSplitStatus{ObservedGeneration: s.Generation}
	cs := newConditionSet(s.Status.Conditions, s.Generation, in.now)
	set := func(st metav1.ConditionStatus, reason, msg string) { cs.set(v1alpha1.ConditionReady, st, reason, msg) }
	if in.decodeErr != "" {
		set(metav1.ConditionFalse, v1alpha1.ReasonInvalidSplit, "the object does not match the v1alpha1 schema: "+in.decodeErr)
		out.Conditions = cs.conds
		return out
	}
	if _, err := revisionspec.ValidateSplit(s); err != nil {
		set(metav1.ConditionFalse, v1alpha1.ReasonInvalidSplit, invalidSplitEffect(s)+err.Error())
		out.Conditions = cs.conds
		return out
	}
	byReason := map[string][]string{}
	leftOut := leftOutMembers(in.routeErr)
	for i, t := range s.Spec.Traffic {
		m := splitMember{Reason: v1alpha1.ReasonPending}
		if i < len(in.members) {
			m = in.members[i]
		}
		if why, ok := leftOut[t.RevisionName]; ok && m.Reason == v1alpha1.ReasonRouted {
			m = splitMember{Reason: v1alpha1.ReasonRevisionNotRouted, Detail: "left out of Envoy configuration: " + why}
		}
		out.Traffic = append(out.Traffic, v1alpha1.TrafficTargetStatus{
			RevisionName: t.RevisionName, Percent: t.Percent, Tag: t.Tag, Reason: m.Reason})
		if m.Reason != v1alpha1.ReasonRouted {
			byReason[m.Reason] = append(byReason[m.Reason], fmt.Sprintf("%s (%d%%): %s", t.RevisionName, t.Percent, m.Detail))
		}
	}
	if st, reason, msg, ok := fleetReady(in); ok {
		set(st, reason, msg)
		out.Conditions = cs.conds
		return out
	}
	var problems []string
	reason := ""
	for _, r := range splitReasonOrder {
		if len(byReason[r]) == 0 {
			continue
		}
		if reason == "" {
			reason = r
		}
		problems = append(problems, byReason[r]...)
	}
	switch reason {
	case "":
		msg := fmt.Sprintf("thaw routes all %d Revisions of the split", len(s.Spec.Traffic))
		if len(in.taken) > 0 {
			msg += "; the split takes these hosts from Revisions that list them (their own route and traffic.percent do not apply there): " +
				strings.Join(in.taken, ", ")
		}
		set(metav1.ConditionTrue, v1alpha1.ReasonResolved, msg)
		out.Hosts = fleetHosts(in)
	case v1alpha1.ReasonPending:
		set(metav1.ConditionUnknown, reason, "waiting for thaw to publish "+strings.Join(problems, "; "))
	default:
		effect := "thaw does not route these Revisions (requests of their share fail): "
		if len(s.Spec.Hosts) > 0 {
			effect = "thaw does not route the split's hosts (they answer 404) because of these Revisions: "
		}
		set(metav1.ConditionFalse, reason, effect+strings.Join(problems, "; "))
	}
	out.Conditions = cs.conds
	return out
}

// splitStatusFingerprint identifies a status apart from transition times,
// to write only what changed.
func splitStatusFingerprint(s v1alpha1.RevisionSplitStatus) string {
	s.Conditions = withoutTransitionTimes(s.Conditions)
	return jsonFingerprint(s)
}
