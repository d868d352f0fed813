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

// readyEvent returns the Event of a Revision whose computed status s has
// a Ready reason worth one: Normal HostTakenBySplit (a split takes some
// of its hosts) or Warning NotRouted (the Envoy translation leaves it
// out), with the condition's message, once per distinct reason and
// message (crd.readyEvent remembers it; it is cleared when Ready has
// another reason, so the next occurrence is reported again). Call with
// p.mu held.
func readyEvent(crd *crdState, r *v1alpha1.Revision, s v1alpha1.RevisionStatus) (revisionEvent, bool) {
	ready := meta.FindStatusCondition(s.Conditions, v1alpha1.ConditionReady)
	typ := ""
	if ready != nil {
		switch ready.Reason {
		case v1alpha1.ReasonHostTakenBySplit:
			typ = corev1.EventTypeNormal
		case v1alpha1.ReasonNotRouted:
			typ = corev1.EventTypeWarning
		}
	}
	if typ == "" {
		crd.readyEvent = ""
		return revisionEvent{}, false
	}
	seen := ready.Reason + ": " + ready.Message
	if crd.readyEvent == seen {
		return revisionEvent{}, false
	}
	crd.readyEvent = seen
	return revisionEvent{ref: revisionRef(r), typ: typ, reason: ready.Reason, msg: ready.Message}, true
}
