package kube

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/thaw-dev/thaw/api/v1alpha1"
	"github.com/thaw-dev/thaw/revision"
)

// revisionEvent is an Event to record on a Revision once the platform
// lock is released.
type revisionEvent struct {
	ref              *corev1.ObjectReference
	typ, reason, msg string
}

// hostsTakenBySplits returns, for each routed fleet split (byHost, from
// splitsByHost) that takes hosts rev lists (its hosts and its tag host),
// "host, host (RevisionSplit ns/name)", sorted by split; nil when none.
func hostsTakenBySplits(byHost map[string]revision.Key, rev *revision.Revision) []string {
	if len(byHost) == 0 {
		return nil
	}
	bySplit := map[revision.Key][]string{}
	for _, h := range append(slices.Clone(rev.Spec.Hosts), rev.Spec.TagHost()) {
		h = revision.NormalizeHost(h)
		if k, ok := byHost[h]; ok && h != "" && !slices.Contains(bySplit[k], h) {
			bySplit[k] = append(bySplit[k], h)
		}
	}
	out := make([]string, 0, len(bySplit))
	for k, hs := range bySplit {
		out = append(out, fmt.Sprintf("%s (RevisionSplit %s)", strings.Join(hs, ", "), k))
	}
	slices.Sort(out)
	return out
}

// hostTakenEvent returns the Normal HostTakenBySplit Event of a Revision
// whose computed status s says a split takes its hosts, once per
// distinct message (crd.takenEvent remembers it; it is cleared when no
// split takes a host any more, so the next taking is reported again).
// Call with p.mu held.
func hostTakenEvent(crd *crdState, r *v1alpha1.Revision, s v1alpha1.RevisionStatus) (revisionEvent, bool) {
	ready := meta.FindStatusCondition(s.Conditions, v1alpha1.ConditionReady)
	if ready == nil || ready.Reason != v1alpha1.ReasonHostTakenBySplit {
		crd.takenEvent = ""
		return revisionEvent{}, false
	}
	if crd.takenEvent == ready.Message {
		return revisionEvent{}, false
	}
	crd.takenEvent = ready.Message
	return revisionEvent{ref: revisionRef(r), typ: corev1.EventTypeNormal, reason: v1alpha1.ReasonHostTakenBySplit,
		msg: ready.Message}, true
}
