package autoscaler

import (
	"testing"
	"time"

	"github.com/thaw-dev/thaw/revision"
)

// gateStep is one Gate.Decide call of a scenario. rec < 0 means an invalid
// decider result. proxySince < 0 means proxy mode is not confirmed.
type gateStep struct {
	at             float64
	rec            int32
	current, ready int32
	poked          bool
	proxySince     float64
	disableToZero  bool

	wantDesired     int32
	wantRecommended int32
	wantZero        bool
	wantReason      string
	wantTimedOut    bool
}

func gateSpec(fns ...func(*revision.Spec)) revision.Spec {
	s := revision.DefaultSpec()
	s.StableWindow = 60 * time.Second
	s.ScaleToZeroGracePeriod = 30 * time.Second
	s.ActivationTimeout = 100 * time.Second
	for _, fn := range fns {
		fn(&s)
	}
	return s
}

func TestGateScenarios(t *testing.T) {
	const notConfirmed = -1e9
	tests := []struct {
		name  string
		spec  revision.Spec
		steps []gateStep
	}{{
		name: "min scale raises the recommendation",
		spec: gateSpec(func(s *revision.Spec) { s.MinScale = 2 }),
		steps: []gateStep{
			{at: 1, rec: 0, current: 2, ready: 2, wantDesired: 2, wantRecommended: 2},
			{at: 3, rec: 5, current: 2, ready: 2, wantDesired: 5, wantRecommended: 5},
		},
	}, {
		name: "max scale caps the recommendation",
		spec: gateSpec(func(s *revision.Spec) { s.MaxScale = 10 }),
		steps: []gateStep{
			{at: 1, rec: 50, current: 1, ready: 1, wantDesired: 10, wantRecommended: 10},
		},
	}, {
		name: "initial scale is a minimum until reached",
		spec: gateSpec(func(s *revision.Spec) { s.InitialScale = 3 }),
		steps: []gateStep{
			{at: 1, rec: 1, current: 1, ready: 0, wantDesired: 3, wantRecommended: 3},
			{at: 3, rec: 1, current: 3, ready: 2, wantDesired: 3, wantRecommended: 3},
			{at: 5, rec: 1, current: 3, ready: 3, wantDesired: 1, wantRecommended: 1},
		},
	}, {
		name: "a revision first seen at zero is not woken by its initial scale",
		spec: gateSpec(func(s *revision.Spec) { s.InitialScale = 3 }),
		steps: []gateStep{
			{at: 1, rec: -1, current: 0, ready: 0, proxySince: 0, wantDesired: 0, wantZero: true},
			{at: 3, rec: 0, current: 0, ready: 0, proxySince: 0, wantDesired: 0, wantZero: true},
		},
	}, {
		name: "activation scale is the lowest non-zero scale",
		spec: gateSpec(func(s *revision.Spec) { s.ActivationScale = 3; s.InitialScale = 0 }),
		steps: []gateStep{
			{at: 1, rec: 1, current: 0, ready: 0, wantDesired: 3, wantRecommended: 3},
			{at: 3, rec: 2, current: 3, ready: 3, wantDesired: 3, wantRecommended: 3},
		},
	}, {
		name: "a poke wakes a revision at zero before any data",
		spec: gateSpec(func(s *revision.Spec) { s.ActivationScale = 2 }),
		steps: []gateStep{
			{at: 1, rec: -1, current: 0, ready: 0, proxySince: 0, wantDesired: 0, wantZero: true},
			{at: 2, rec: -1, current: 0, ready: 0, poked: true, wantDesired: 2, wantRecommended: 2},
		},
	}, {
		name: "no data keeps the current scale within bounds and counts as active",
		spec: gateSpec(func(s *revision.Spec) { s.MaxScale = 3 }),
		steps: []gateStep{
			{at: 1, rec: -1, current: 5, ready: 5, wantDesired: 3, wantRecommended: 3},
			{at: 100, rec: -1, current: 3, ready: 3, wantDesired: 3, wantRecommended: 3},
			// Active at t=100: zero is held for a stable window from then.
			{at: 150, rec: 0, current: 1, ready: 1, proxySince: 0, wantDesired: 1, wantReason: ReasonActiveWindow},
		},
	}, {
		name: "zero is held within the stable window after activity",
		spec: gateSpec(),
		steps: []gateStep{
			{at: 10, rec: 0, current: 1, ready: 1, proxySince: 0, wantDesired: 1, wantReason: ReasonActiveWindow},
			{at: 59, rec: 0, current: 1, ready: 1, proxySince: 0, wantDesired: 1, wantReason: ReasonActiveWindow},
			{at: 60, rec: 0, current: 1, ready: 1, proxySince: 0, wantDesired: 0, wantZero: true},
		},
	}, {
		name: "zero waits for proxy mode to be confirmed",
		spec: gateSpec(),
		steps: []gateStep{
			{at: 61, rec: 0, current: 1, ready: 1, proxySince: notConfirmed, wantDesired: 1, wantZero: true, wantReason: ReasonProxyUnconfirmed},
			{at: 63, rec: 0, current: 1, ready: 1, proxySince: notConfirmed, wantDesired: 1, wantZero: true, wantReason: ReasonProxyUnconfirmed},
			{at: 65, rec: 0, current: 1, ready: 1, proxySince: 20, wantDesired: 0, wantZero: true},
		},
	}, {
		name: "zero waits for the grace period in confirmed proxy mode",
		spec: gateSpec(),
		steps: []gateStep{
			{at: 61, rec: 0, current: 1, ready: 1, proxySince: 55, wantDesired: 1, wantZero: true, wantReason: ReasonGracePeriod},
			{at: 84.9, rec: 0, current: 1, ready: 1, proxySince: 55, wantDesired: 1, wantZero: true, wantReason: ReasonGracePeriod},
			{at: 85, rec: 0, current: 1, ready: 1, proxySince: 55, wantDesired: 0, wantZero: true},
		},
	}, {
		name: "zero waits for the pod retention period after becoming idle",
		spec: gateSpec(func(s *revision.Spec) { s.ScaleToZeroPodRetention = 20 * time.Second }),
		steps: []gateStep{
			{at: 60, rec: 0, current: 1, ready: 1, proxySince: 0, wantDesired: 1, wantZero: true, wantReason: ReasonPodRetention},
			{at: 79, rec: 0, current: 1, ready: 1, proxySince: 0, wantDesired: 1, wantZero: true, wantReason: ReasonPodRetention},
			{at: 80, rec: 0, current: 1, ready: 1, proxySince: 0, wantDesired: 0, wantZero: true},
		},
	}, {
		name: "load resets idleness",
		spec: gateSpec(),
		steps: []gateStep{
			{at: 61, rec: 0, current: 1, ready: 1, proxySince: notConfirmed, wantDesired: 1, wantZero: true, wantReason: ReasonProxyUnconfirmed},
			{at: 63, rec: 1, current: 1, ready: 1, proxySince: notConfirmed, wantDesired: 1, wantRecommended: 1},
			{at: 65, rec: 0, current: 1, ready: 1, proxySince: 0, wantDesired: 1, wantReason: ReasonActiveWindow},
		},
	}, {
		name: "scale to zero disabled keeps one pod",
		spec: gateSpec(),
		steps: []gateStep{
			{at: 100, rec: 0, current: 1, ready: 1, proxySince: 0, disableToZero: true, wantDesired: 1, wantRecommended: 1},
		},
	}, {
		name: "an activation without a ready pod scales back to zero after the timeout",
		spec: gateSpec(),
		steps: []gateStep{
			{at: 0, rec: 0, current: 0, ready: 0, proxySince: 0, wantDesired: 0, wantZero: true},
			{at: 2, rec: 1, current: 0, ready: 0, proxySince: 0, wantDesired: 1, wantRecommended: 1},
			// Load went away while waking: the pod is kept while activating.
			{at: 70, rec: 0, current: 1, ready: 0, proxySince: 0, wantDesired: 1, wantReason: ReasonActivating},
			{at: 101.9, rec: 1, current: 1, ready: 0, proxySince: 0, wantDesired: 1, wantRecommended: 1},
			{at: 102, rec: 1, current: 1, ready: 0, proxySince: 0, wantDesired: 0, wantRecommended: 1, wantZero: true, wantReason: ReasonActivationTimeout, wantTimedOut: true},
			// Back at zero: no longer timed out (a new request's wake-up is
			// the next attempt). Stale load does not wake it again; a new
			// request does.
			{at: 104, rec: 1, current: 0, ready: 0, proxySince: 0, wantDesired: 0, wantZero: true, wantReason: ReasonActivationFailed},
			{at: 106, rec: 1, current: 0, ready: 0, proxySince: 0, poked: true, wantDesired: 1, wantRecommended: 1},
		},
	}, {
		name: "an activation timeout waits for proxy mode",
		spec: gateSpec(),
		steps: []gateStep{
			{at: 2, rec: 1, current: 0, ready: 0, proxySince: notConfirmed, wantDesired: 1, wantRecommended: 1},
			{at: 102, rec: 1, current: 1, ready: 0, proxySince: notConfirmed, wantDesired: 1, wantRecommended: 1, wantZero: true, wantReason: ReasonActivationTimeout, wantTimedOut: true},
			{at: 104, rec: 1, current: 1, ready: 0, proxySince: notConfirmed, wantDesired: 1, wantRecommended: 1, wantZero: true, wantReason: ReasonActivationTimeout, wantTimedOut: true},
			{at: 106, rec: 1, current: 1, ready: 0, proxySince: 105, wantDesired: 0, wantRecommended: 1, wantZero: true, wantReason: ReasonActivationTimeout, wantTimedOut: true},
			{at: 108, rec: 0, current: 0, ready: 0, proxySince: 105, wantDesired: 0, wantZero: true},
		},
	}, {
		name: "an activation timeout that bounds keep from zero lasts until a pod is ready",
		spec: gateSpec(),
		steps: []gateStep{
			{at: 2, rec: 1, current: 0, ready: 0, proxySince: 0, wantDesired: 1, wantRecommended: 1},
			{at: 102, rec: 1, current: 1, ready: 0, proxySince: 0, disableToZero: true, wantDesired: 1, wantRecommended: 1, wantReason: ReasonActivationTimeout, wantTimedOut: true},
			{at: 300, rec: 1, current: 1, ready: 0, proxySince: 0, disableToZero: true, wantDesired: 1, wantRecommended: 1, wantReason: ReasonActivationTimeout, wantTimedOut: true},
			{at: 302, rec: 1, current: 1, ready: 1, proxySince: 0, disableToZero: true, wantDesired: 1, wantRecommended: 1},
		},
	}, {
		name: "an activation ends with the first ready pod",
		spec: gateSpec(),
		steps: []gateStep{
			{at: 2, rec: 1, current: 0, ready: 0, proxySince: 0, wantDesired: 1, wantRecommended: 1},
			{at: 10, rec: 1, current: 1, ready: 1, proxySince: 0, wantDesired: 1, wantRecommended: 1},
			{at: 200, rec: 1, current: 1, ready: 1, proxySince: 0, wantDesired: 1, wantRecommended: 1},
		},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := NewGate(t0)
			for i, st := range tc.steps {
				in := GateInput{
					Now: at(st.at), Spec: &tc.spec, Current: st.current, Ready: st.ready,
					Poked: st.poked, EnableScaleToZero: !st.disableToZero,
					ProxyConfirmed: st.proxySince > notConfirmed, ProxySince: at(st.proxySince),
				}
				if st.rec >= 0 {
					in.Result = Result{ScaleValid: true, DesiredPodCount: st.rec}
				}
				got := g.Decide(in)
				want := GateOutput{Recommended: st.wantRecommended, Desired: st.wantDesired, WantZero: st.wantZero, Reason: st.wantReason,
					ActivationTimedOut: st.wantTimedOut}
				if got != want {
					t.Errorf("step %d (t=%vs): got %+v, want %+v", i, st.at, got, want)
				}
			}
		})
	}
}
