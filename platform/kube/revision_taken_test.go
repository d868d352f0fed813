package kube

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/thaw-dev/thaw/api/v1alpha1"
	"github.com/thaw-dev/thaw/revision"
)

// TestHostTakenBySplit: a Revision listing a host (or having the tag
// host) that a routed fleet split takes is Ready True HostTakenBySplit,
// the message naming the hosts and the split; one Normal Event per
// distinct message, again after the split let go and took it again.
func TestHostTakenBySplit(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	routedSplit := &revision.Split{Key: key("s"), Hosts: []string{"shop.example.com", "*.shop.example.com"},
		Traffic: []revision.SplitTarget{{Revision: key("v1"), Percent: 100, Tag: "canary"}}}
	invalid := &revision.Split{Key: key("bad"), Hosts: []string{"bad.example.com"}, Err: revision.ErrSplitSpec,
		Traffic: []revision.SplitTarget{{Revision: key("v1"), Percent: 100}}}
	snap := &revision.Snapshot{Splits: map[revision.Key]*revision.Split{routedSplit.Key: routedSplit, invalid.Key: invalid}}
	byHost := splitsByHost(snap)
	tests := []struct {
		name   string
		hosts  []string
		tag    string
		want   []string
		reason string
	}{
		{"no hosts", nil, "", nil, v1alpha1.ReasonRouted},
		{"own host only", []string{"mine.example.com"}, "", nil, v1alpha1.ReasonRouted},
		{"invalid split takes nothing", []string{"bad.example.com"}, "", nil, v1alpha1.ReasonRouted},
		{"host taken", []string{"mine.example.com", "SHOP.example.com"}, "",
			[]string{"shop.example.com (RevisionSplit apps/s)"}, v1alpha1.ReasonHostTakenBySplit},
		{"wildcard and tag host", []string{"*.shop.example.com", "shop.example.com"}, "canary",
			[]string{"*.shop.example.com, shop.example.com, canary-shop.example.com (RevisionSplit apps/s)"}, v1alpha1.ReasonHostTakenBySplit},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rev := &revision.Revision{Key: key("r"), Mode: revision.ModeProxy, DesiredScale: 0,
				Spec: revision.Spec{Hosts: tc.hosts, Tag: tc.tag}}
			got := hostsTakenBySplits(byHost, rev)
			if !slices.Equal(got, tc.want) {
				t.Fatalf("taken %q, want %q", got, tc.want)
			}
			st := revisionStatus(statusInput{rev: rev, takenBy: got, now: t0})
			ready := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionReady)
			if ready.Status != metav1.ConditionTrue || ready.Reason != tc.reason {
				t.Errorf("Ready %s %s, want True %s", ready.Status, ready.Reason, tc.reason)
			}
			for _, w := range tc.want {
				if !strings.Contains(ready.Message, w) {
					t.Errorf("message %q lacks %q", ready.Message, w)
				}
			}
		})
	}

	// Events: once per distinct message.
	crd := &crdState{}
	obj := &v1alpha1.Revision{ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: "r"}}
	rev := &revision.Revision{Key: key("r"), Mode: revision.ModeProxy, Spec: revision.Spec{Hosts: []string{"shop.example.com"}}}
	taken := revisionStatus(statusInput{rev: rev, takenBy: hostsTakenBySplits(byHost, rev), now: t0})
	free := revisionStatus(statusInput{rev: rev, now: t0})
	for i, step := range []struct {
		st    v1alpha1.RevisionStatus
		event bool
	}{{taken, true}, {taken, false}, {free, false}, {taken, true}} {
		ev, ok := readyEvent(crd, obj, step.st)
		if ok != step.event {
			t.Fatalf("step %d: event %v, want %v", i, ok, step.event)
		}
		if ok && (ev.typ != corev1.EventTypeNormal || ev.reason != v1alpha1.ReasonHostTakenBySplit ||
			ev.ref.Name != "r" || !strings.Contains(ev.msg, "RevisionSplit apps/s")) {
			t.Errorf("step %d: event %+v", i, ev)
		}
	}
}
