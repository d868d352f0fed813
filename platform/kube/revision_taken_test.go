package kube

import (
	"errors"
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

// TestRevisionNotRouted: a valid Revision that the Envoy translation
// leaves out is Ready False NotRouted with the translation's reason (over
// HostTakenBySplit), its Active condition still telling its pods; it is
// Routed again once the translation takes it back. One Warning Event per
// distinct reason, again after it was routed in between.
func TestRevisionNotRouted(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	collision := errors.New(`host "shop.example.com" is also listed by apps/other`)
	sum90 := errors.New(`traffic split of host "odd.example.com": percents sum to 90, want 100`)
	p := &Platform{routes: fakeVerdicts{skipped: map[revision.Key]error{key("r"): collision}}}
	if err := p.revisionVerdict(key("r")); err != collision {
		t.Fatalf("revisionVerdict(r) = %v, want the translation's reason", err)
	}
	if err := p.revisionVerdict(key("routed")); err != nil {
		t.Fatalf("revisionVerdict(routed) = %v, want nil", err)
	}
	if err := (&Platform{}).revisionVerdict(key("r")); err != nil {
		t.Fatalf("without verdicts: %v, want nil", err)
	}

	rev := &revision.Revision{Key: key("r"), Mode: revision.ModeProxy, Spec: revision.Spec{Hosts: []string{"shop.example.com"}}}
	tests := []struct {
		name      string
		notRouted error
		takenBy   []string
		status    metav1.ConditionStatus
		reason    string
		msg       string
	}{
		{"routed", nil, nil, metav1.ConditionTrue, v1alpha1.ReasonRouted, "thaw routes the revision"},
		{"host collision", collision, nil, metav1.ConditionFalse, v1alpha1.ReasonNotRouted, collision.Error()},
		{"left out wins over a host taken", sum90, []string{"shop.example.com (RevisionSplit apps/s)"},
			metav1.ConditionFalse, v1alpha1.ReasonNotRouted, "percents sum to 90"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := revisionStatus(statusInput{rev: rev, notRouted: tc.notRouted, takenBy: tc.takenBy, now: t0})
			ready := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionReady)
			if ready.Status != tc.status || ready.Reason != tc.reason || !strings.Contains(ready.Message, tc.msg) {
				t.Errorf("Ready %s %s %q, want %s %s containing %q", ready.Status, ready.Reason, ready.Message, tc.status, tc.reason, tc.msg)
			}
			if a := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionActive); a.Reason != v1alpha1.ReasonScaledToZero || st.Mode != "proxy" {
				t.Errorf("Active %s, mode %q: want ScaledToZero and proxy whether routed or not", a.Reason, st.Mode)
			}
		})
	}

	crd := &crdState{}
	obj := &v1alpha1.Revision{ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: "r"}}
	out := revisionStatus(statusInput{rev: rev, notRouted: collision, now: t0})
	out2 := revisionStatus(statusInput{rev: rev, notRouted: sum90, now: t0})
	routed := revisionStatus(statusInput{rev: rev, now: t0})
	for i, step := range []struct {
		st    v1alpha1.RevisionStatus
		event string // the message's telling part; "" for no Event
	}{{out, "also listed"}, {out, ""}, {out2, "sum to 90"}, {routed, ""}, {out2, "sum to 90"}} {
		ev, ok := readyEvent(crd, obj, step.st)
		if ok != (step.event != "") {
			t.Fatalf("step %d: event %v, want %v", i, ok, step.event != "")
		}
		if ok && (ev.typ != corev1.EventTypeWarning || ev.reason != v1alpha1.ReasonNotRouted || ev.ref.Name != "r" ||
			!strings.Contains(ev.msg, step.event)) {
			t.Errorf("step %d: event %+v, want Warning NotRouted naming %q", i, ev, step.event)
		}
	}
}
