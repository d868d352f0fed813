package kube

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/thaw-dev/thaw/api/v1alpha1"
	"github.com/thaw-dev/thaw/revision"
)

func testSplit(traffic ...v1alpha1.TrafficTarget) *v1alpha1.RevisionSplit {
	return &v1alpha1.RevisionSplit{
		ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: "shop", Generation: 3},
		Spec:       v1alpha1.RevisionSplitSpec{Traffic: traffic},
	}
}

func tt(name string, percent int32, tag string) v1alpha1.TrafficTarget {
	return v1alpha1.TrafficTarget{RevisionName: name, Percent: percent, Tag: tag}
}

var (
	routed  = splitMember{Reason: v1alpha1.ReasonRouted}
	missing = splitMember{Reason: v1alpha1.ReasonRevisionNotFound, Detail: "no Revision apps/ghost"}
	hpa     = splitMember{Reason: v1alpha1.ReasonOtherAutoscaler, Detail: "HorizontalPodAutoscaler apps/web-hpa scales it"}
	refused = splitMember{Reason: v1alpha1.ReasonRevisionInvalid, Detail: "spec.port"}
	pending = splitMember{Reason: v1alpha1.ReasonPending, Detail: "not published"}
)

func TestSplitStatus(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		name    string
		split   *v1alpha1.RevisionSplit
		members []splitMember
		decode  string
		status  metav1.ConditionStatus
		reason  string
		// msg: substrings of the Ready message.
		msg     []string
		traffic []string // reason per entry
	}{
		{"resolved", testSplit(tt("v1", 90, ""), tt("v2", 10, "canary")), []splitMember{routed, routed}, "",
			metav1.ConditionTrue, v1alpha1.ReasonResolved, []string{"all 2 Revisions"}, []string{"Routed", "Routed"}},
		{"missing revision", testSplit(tt("v1", 90, ""), tt("ghost", 10, "")), []splitMember{routed, missing}, "",
			metav1.ConditionFalse, v1alpha1.ReasonRevisionNotFound, []string{"ghost (10%)", "no Revision apps/ghost"}, []string{"Routed", "RevisionNotFound"}},
		{"missing wins over an HPA, both named", testSplit(tt("v1", 50, ""), tt("ghost", 50, "")), []splitMember{hpa, missing}, "",
			metav1.ConditionFalse, v1alpha1.ReasonRevisionNotFound, []string{"ghost (50%)", "v1 (50%)", "web-hpa"}, []string{"ScaledByOtherAutoscaler", "RevisionNotFound"}},
		{"scaled by an HPA, even at 0%", testSplit(tt("v1", 100, ""), tt("v0", 0, "prev")), []splitMember{routed, hpa}, "",
			metav1.ConditionFalse, v1alpha1.ReasonOtherAutoscaler, []string{"v0 (0%)", "web-hpa"}, []string{"Routed", "ScaledByOtherAutoscaler"}},
		{"refused revision", testSplit(tt("v1", 100, "")), []splitMember{refused}, "",
			metav1.ConditionFalse, v1alpha1.ReasonRevisionInvalid, []string{"spec.port"}, []string{"RevisionInvalid"}},
		{"pending", testSplit(tt("v1", 60, ""), tt("v2", 40, "")), []splitMember{routed, pending}, "",
			metav1.ConditionUnknown, v1alpha1.ReasonPending, []string{"v2 (40%)"}, []string{"Routed", "Pending"}},
		{"sum 90", testSplit(tt("v1", 80, ""), tt("v2", 10, "")), []splitMember{routed, routed}, "",
			metav1.ConditionFalse, v1alpha1.ReasonInvalidSplit, []string{"sum to 90", "500"}, nil},
		{"tag twice", testSplit(tt("v1", 50, "x"), tt("v2", 50, "x")), []splitMember{routed, routed}, "",
			metav1.ConditionFalse, v1alpha1.ReasonInvalidSplit, []string{`tag "x" twice`}, nil},
		{"undecodable object", testSplit(), nil, "json: cannot unmarshal string into percent",
			metav1.ConditionFalse, v1alpha1.ReasonInvalidSplit, []string{"v1alpha1 schema", "cannot unmarshal"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := splitStatus(splitInput{split: tc.split, members: tc.members, decodeErr: tc.decode, now: t0})
			if st.ObservedGeneration != 3 {
				t.Errorf("observedGeneration %d, want 3", st.ObservedGeneration)
			}
			c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionReady)
			if c == nil || c.Status != tc.status || c.Reason != tc.reason || c.ObservedGeneration != 3 {
				t.Fatalf("Ready %+v, want %s %s", c, tc.status, tc.reason)
			}
			for _, m := range tc.msg {
				if !strings.Contains(c.Message, m) {
					t.Errorf("Ready message %q does not contain %q", c.Message, m)
				}
			}
			var got []string
			for i, e := range st.Traffic {
				got = append(got, e.Reason)
				if want := tc.split.Spec.Traffic[i]; e.RevisionName != want.RevisionName || e.Percent != want.Percent || e.Tag != want.Tag {
					t.Errorf("traffic[%d] %+v, want %+v", i, e, want)
				}
			}
			if strings.Join(got, ",") != strings.Join(tc.traffic, ",") {
				t.Errorf("traffic reasons %v, want %v", got, tc.traffic)
			}
		})
	}
}

// TestSplitStatusTransitions: lastTransitionTime moves only when Ready's
// status changes, and the fingerprint ignores it.
func TestSplitStatusTransitions(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	s := testSplit(tt("v1", 90, ""), tt("v2", 10, ""))
	first := splitStatus(splitInput{split: s, members: []splitMember{routed, missing}, now: t0})
	s.Status = first
	again := splitStatus(splitInput{split: s, members: []splitMember{routed, missing}, now: t0.Add(time.Minute)})
	if splitStatusFingerprint(first) != splitStatusFingerprint(again) {
		t.Error("same input, another fingerprint")
	}
	if c := meta.FindStatusCondition(again.Conditions, v1alpha1.ConditionReady); !c.LastTransitionTime.Time.Equal(t0) {
		t.Errorf("unchanged Ready moved its transition time to %v", c.LastTransitionTime)
	}
	s.Status = again
	fixed := splitStatus(splitInput{split: s, members: []splitMember{routed, routed}, now: t0.Add(2 * time.Minute)})
	if c := meta.FindStatusCondition(fixed.Conditions, v1alpha1.ConditionReady); c.Status != metav1.ConditionTrue || !c.LastTransitionTime.Time.Equal(t0.Add(2*time.Minute)) {
		t.Errorf("Ready after the fix %+v, want True at t0+2m", c)
	}
	if splitStatusFingerprint(fixed) == splitStatusFingerprint(again) {
		t.Error("a changed status kept its fingerprint")
	}
}

func TestResolveMember(t *testing.T) {
	reg := revision.NewRegistry(revision.RegistryOptions{})
	reg.Upsert(key("web"), revision.DefaultSpec())
	reg.SetInvalid(key("scaled"), errors.Join(ErrOtherAutoscaler, errors.New("HorizontalPodAutoscaler apps/h scales it")))
	reg.SetInvalid(key("bad"), errors.New("spec.port: 0"))
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second) // a deadlock guard
	defer cancel()
	snap, err := reg.WaitFor(ctx, func(s *revision.Snapshot) bool { return s.Get(key("web")) != nil && len(s.Invalid) == 2 })
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		key    string
		cached bool
		want   string
	}{
		{"web", false, v1alpha1.ReasonRouted},
		{"scaled", true, v1alpha1.ReasonOtherAutoscaler},
		{"bad", true, v1alpha1.ReasonRevisionInvalid},
		{"new", true, v1alpha1.ReasonPending},
		{"ghost", false, v1alpha1.ReasonRevisionNotFound},
	} {
		if got := resolveMember(snap, key(c.key), c.cached); got.Reason != c.want {
			t.Errorf("%s: %+v, want %s", c.key, got, c.want)
		}
	}
	if m := resolveMember(snap, key("scaled"), true); !strings.Contains(m.Detail, "apps/h") {
		t.Errorf("detail %q does not name the HPA", m.Detail)
	}
}
