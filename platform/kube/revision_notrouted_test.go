package kube

import (
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/thaw-dev/thaw/api/v1alpha1"
	"github.com/thaw-dev/thaw/revision"
)

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
