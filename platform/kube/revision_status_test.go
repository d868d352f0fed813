package kube

import (
	"errors"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/thaw-dev/thaw/api/v1alpha1"
	"github.com/thaw-dev/thaw/revision"
)

func TestRevisionStatus(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	ready := []revision.Backend{{Address: "10.0.0.1", Port: 8080, Ready: true}, {Address: "10.0.0.2", Port: 8080, Ready: true}}
	rev := func(mode revision.Mode, desired int32, backends []revision.Backend) *revision.Revision {
		return &revision.Revision{Mode: mode, DesiredScale: desired, Backends: backends}
	}
	type cond struct {
		status metav1.ConditionStatus
		reason string
	}
	tests := []struct {
		name          string
		in            statusInput
		mode          string
		desired       *int32
		actual        int32
		ready, active cond
	}{
		{
			name: "serving", in: statusInput{rev: rev(revision.ModeServe, 2, ready), replicas: 2},
			mode: "serve", desired: ptrTo[int32](2), actual: 2,
			ready: cond{metav1.ConditionTrue, v1alpha1.ReasonRouted}, active: cond{metav1.ConditionTrue, v1alpha1.ReasonServing},
		},
		{
			name: "scaled to zero", in: statusInput{rev: rev(revision.ModeProxy, 0, nil)},
			mode: "proxy", desired: ptrTo[int32](0),
			ready: cond{metav1.ConditionTrue, v1alpha1.ReasonRouted}, active: cond{metav1.ConditionFalse, v1alpha1.ReasonScaledToZero},
		},
		{
			name: "idle before the first decision", in: statusInput{rev: rev(revision.ModeProxy, -1, nil)},
			mode:  "proxy",
			ready: cond{metav1.ConditionTrue, v1alpha1.ReasonRouted}, active: cond{metav1.ConditionFalse, v1alpha1.ReasonScaledToZero},
		},
		{
			name: "waking: desired 1, no ready pod", in: statusInput{rev: rev(revision.ModeProxy, 1, nil), replicas: 1},
			mode: "proxy", desired: ptrTo[int32](1),
			ready: cond{metav1.ConditionTrue, v1alpha1.ReasonRouted}, active: cond{metav1.ConditionFalse, v1alpha1.ReasonWaking},
		},
		{
			name: "waking: replicas before the first decision", in: statusInput{rev: rev(revision.ModeProxy, -1, nil), replicas: 1},
			mode:  "proxy",
			ready: cond{metav1.ConditionTrue, v1alpha1.ReasonRouted}, active: cond{metav1.ConditionFalse, v1alpha1.ReasonWaking},
		},
		{
			name: "wake failed: image pull back-off, no ready pod",
			in: statusInput{rev: &revision.Revision{Mode: revision.ModeProxy, DesiredScale: 1,
				WakeFailure: &revision.WakeFailure{Reason: revision.WakeImagePullBackOff, Message: "pod p container app"}}, replicas: 1},
			mode: "proxy", desired: ptrTo[int32](1),
			ready: cond{metav1.ConditionTrue, v1alpha1.ReasonRouted}, active: cond{metav1.ConditionFalse, revision.WakeImagePullBackOff},
		},
		{
			name: "wake failed: activation timeout",
			in: statusInput{rev: &revision.Revision{Mode: revision.ModeProxy, DesiredScale: 0,
				WakeFailure: &revision.WakeFailure{Reason: revision.WakeActivationTimeout, Message: "no backend became ready within the activation timeout (10m0s) of the wake-up"}}, replicas: 1},
			mode: "proxy", desired: ptrTo[int32](0),
			ready: cond{metav1.ConditionTrue, v1alpha1.ReasonRouted}, active: cond{metav1.ConditionFalse, revision.WakeActivationTimeout},
		},
		{
			name: "wake failure of one pod while another serves",
			in: statusInput{rev: &revision.Revision{Mode: revision.ModeServe, DesiredScale: 2, Backends: ready[:1],
				WakeFailure: &revision.WakeFailure{Reason: revision.WakeCrashLoopBackOff}}, replicas: 2},
			mode: "serve", desired: ptrTo[int32](2), actual: 1,
			ready: cond{metav1.ConditionTrue, v1alpha1.ReasonRouted}, active: cond{metav1.ConditionTrue, v1alpha1.ReasonServing},
		},
		{
			name:   "invalid configuration",
			in:     statusInput{invalid: &revision.FieldError{Field: "spec.hosts", Allowed: "at least one host name"}},
			mode:   "invalid",
			ready:  cond{metav1.ConditionFalse, v1alpha1.ReasonInvalidConfiguration},
			active: cond{metav1.ConditionFalse, v1alpha1.ReasonInvalidConfiguration},
		},
		{
			name:   "scale target missing",
			in:     statusInput{invalid: errors.Join(ErrScaleTarget, &revision.FieldError{Field: "spec.scaleTargetRef", Allowed: "an existing object"})},
			mode:   "invalid",
			ready:  cond{metav1.ConditionFalse, v1alpha1.ReasonScaleTargetNotFound},
			active: cond{metav1.ConditionFalse, v1alpha1.ReasonScaleTargetNotFound},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.in.generation, tt.in.now = 3, t0
			s := revisionStatus(tt.in)
			if s.Mode != tt.mode || s.ActualScale != tt.actual || s.ObservedGeneration != 3 {
				t.Errorf("mode %q actual %d observedGeneration %d, want %q %d 3", s.Mode, s.ActualScale, s.ObservedGeneration, tt.mode, tt.actual)
			}
			if (s.DesiredScale == nil) != (tt.desired == nil) || (s.DesiredScale != nil && *s.DesiredScale != *tt.desired) {
				t.Errorf("desiredScale %v, want %v", s.DesiredScale, tt.desired)
			}
			for typ, want := range map[string]cond{v1alpha1.ConditionReady: tt.ready, v1alpha1.ConditionActive: tt.active} {
				c := meta.FindStatusCondition(s.Conditions, typ)
				if c == nil || c.Status != want.status || c.Reason != want.reason || c.ObservedGeneration != 3 || c.Message == "" {
					t.Errorf("condition %s = %+v, want %+v", typ, c, want)
				}
			}
		})
	}
}

// TestRevisionStatusTransitions: a condition keeps its lastTransitionTime
// while its status holds, and the fingerprint ignores transition times.
func TestRevisionStatusTransitions(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	waking := revisionStatus(statusInput{rev: &revision.Revision{Mode: revision.ModeProxy, DesiredScale: 1}, now: t0})
	later := revisionStatus(statusInput{rev: &revision.Revision{Mode: revision.ModeProxy, DesiredScale: 1}, prior: waking.Conditions, now: t0.Add(time.Minute)})
	if statusFingerprint(waking) != statusFingerprint(later) {
		t.Errorf("same state, different fingerprints:\n%s\n%s", statusFingerprint(waking), statusFingerprint(later))
	}
	serving := revisionStatus(statusInput{
		rev:   &revision.Revision{Mode: revision.ModeServe, DesiredScale: 1, Backends: []revision.Backend{{Address: "10.0.0.1", Port: 1, Ready: true}}},
		prior: later.Conditions, now: t0.Add(2 * time.Minute),
	})
	readyC := meta.FindStatusCondition(serving.Conditions, v1alpha1.ConditionReady)
	activeC := meta.FindStatusCondition(serving.Conditions, v1alpha1.ConditionActive)
	if !readyC.LastTransitionTime.Time.Equal(t0) {
		t.Errorf("Ready moved its transition time to %v; it stayed True since %v", readyC.LastTransitionTime, t0)
	}
	if !activeC.LastTransitionTime.Time.Equal(t0.Add(2*time.Minute)) || activeC.Status != metav1.ConditionTrue {
		t.Errorf("Active = %+v, want True since the flip", activeC)
	}
	if statusFingerprint(serving) == statusFingerprint(later) {
		t.Error("a changed status kept its fingerprint")
	}
}

func ptrTo[T any](v T) *T { return &v }
