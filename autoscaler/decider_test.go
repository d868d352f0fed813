package autoscaler

import (
	"testing"
	"time"

	"github.com/thaw-dev/thaw/revision"
)

// kpaSpec returns a default spec with target 10 per pod at 100% utilization
// unless changed by fns.
func kpaSpec(fns ...func(*revision.Spec)) revision.Spec {
	s := revision.DefaultSpec()
	s.Target = 10
	s.TargetUtilizationPercentage = 100
	for _, fn := range fns {
		fn(&s)
	}
	return s
}

func conc(stable, panicV float64) WindowStats {
	return WindowStats{StableConcurrency: stable, PanicConcurrency: panicV}
}

// kpaStep is one decision of a scenario: at seconds after t0, with stats
// and ready pods; want* are checked.
type kpaStep struct {
	at        float64
	stats     WindowStats
	ready     int32
	want      int32
	wantPanic bool
}

func TestKPAScenarios(t *testing.T) {
	tests := []struct {
		name  string
		spec  revision.Spec
		steps []kpaStep
	}{{
		name: "steady load at target keeps the pods",
		spec: kpaSpec(func(s *revision.Spec) { s.TargetUtilizationPercentage = 70 }),
		steps: []kpaStep{
			{at: 0, stats: conc(21, 21), ready: 3, want: 3},
			{at: 2, stats: conc(21, 21), ready: 3, want: 3},
		},
	}, {
		name: "seed example: MSUR=1.1, OCC=3, RPC=2, TV=1 gives 3 pods",
		spec: kpaSpec(func(s *revision.Spec) { s.Target, s.MaxScaleUpRate = 1, 1.1 }),
		steps: []kpaStep{
			{at: 0, stats: conc(3, 3), ready: 2, want: 3},
		},
	}, {
		name: "scale-up rate bounds growth, one pod at least; ready 0 counts as 1",
		spec: kpaSpec(func(s *revision.Spec) { s.MaxScaleUpRate = 1.01 }),
		steps: []kpaStep{
			{at: 0, stats: conc(1000, 0), ready: 0, want: 2},
			{at: 2, stats: conc(1000, 0), ready: 10, want: 11},
		},
	}, {
		name: "a burst enters panic mode and scale-down is refused during it",
		spec: kpaSpec(),
		steps: []kpaStep{
			{at: 0, stats: conc(5, 5), ready: 1, want: 1},
			{at: 2, stats: conc(8, 50), ready: 1, want: 5, wantPanic: true},
			{at: 4, stats: conc(10, 20), ready: 5, want: 5, wantPanic: true},
			{at: 30, stats: conc(10, 10), ready: 5, want: 5, wantPanic: true},
			// Over the threshold again: panic is extended from t=40.
			{at: 40, stats: conc(10, 100), ready: 5, want: 10, wantPanic: true},
			{at: 90, stats: conc(10, 10), ready: 10, want: 10, wantPanic: true},
		},
	}, {
		name: "panic mode ends a full stable window after the last time over the threshold",
		spec: kpaSpec(func(s *revision.Spec) { s.MaxScaleDownRate = 100 }),
		steps: []kpaStep{
			{at: 0, stats: conc(10, 40), ready: 1, want: 4, wantPanic: true},
			{at: 60, stats: conc(10, 10), ready: 4, want: 4, wantPanic: true},
			{at: 60.5, stats: conc(10, 10), ready: 4, want: 1, wantPanic: false},
		},
	}, {
		name: "the panic threshold is inclusive",
		spec: kpaSpec(),
		steps: []kpaStep{
			{at: 0, stats: conc(0, 20), ready: 1, want: 2, wantPanic: true},
		},
	}, {
		name: "in panic the larger of stable and panic counts wins",
		spec: kpaSpec(),
		steps: []kpaStep{
			{at: 0, stats: conc(70, 30), ready: 1, want: 7, wantPanic: true},
		},
	}, {
		name: "scale-down rate limits 10 to 5 to 3 with rate 2",
		spec: kpaSpec(),
		steps: []kpaStep{
			{at: 0, stats: conc(30, 30), ready: 10, want: 5},
			{at: 2, stats: conc(30, 30), ready: 5, want: 3},
			{at: 4, stats: conc(30, 30), ready: 3, want: 3},
		},
	}, {
		name: "scale-down delay holds the largest desired within the delay",
		spec: kpaSpec(func(s *revision.Spec) { s.ScaleDownDelay, s.MaxScaleDownRate = 10*time.Second, 1000 }),
		steps: []kpaStep{
			{at: 0, stats: conc(50, 50), ready: 5, want: 5},
			{at: 2, stats: conc(10, 10), ready: 5, want: 5},
			{at: 4, stats: conc(30, 30), ready: 5, want: 5},
			{at: 9.9, stats: conc(10, 10), ready: 5, want: 5},
			{at: 10, stats: conc(10, 10), ready: 5, want: 3},
			{at: 14, stats: conc(10, 10), ready: 5, want: 1},
			{at: 16, stats: conc(60, 10), ready: 1, want: 6},
		},
	}, {
		name: "rps metric scales on requests per second",
		spec: kpaSpec(func(s *revision.Spec) { s.Metric, s.Target = revision.MetricRPS, 5 }),
		steps: []kpaStep{
			{at: 0, stats: WindowStats{StableConcurrency: 1000, PanicConcurrency: 1000, StableRPS: 20, PanicRPS: 20}, ready: 4, want: 4},
			{at: 2, stats: WindowStats{StableRPS: 30, PanicRPS: 30}, ready: 4, want: 6},
		},
	}, {
		name: "no load goes to zero at the rate's pace",
		spec: kpaSpec(),
		steps: []kpaStep{
			{at: 0, stats: conc(0, 0), ready: 4, want: 2},
			{at: 2, stats: conc(0, 0), ready: 2, want: 1},
			{at: 4, stats: conc(0, 0), ready: 1, want: 0},
		},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var k KPA
			for i, st := range tc.steps {
				got := k.Step(&tc.spec, st.stats, st.ready, at(st.at))
				if !got.ScaleValid {
					t.Fatalf("step %d: invalid result", i)
				}
				if got.DesiredPodCount != st.want || got.InPanic != st.wantPanic {
					t.Errorf("step %d (t=%vs): desired %d panic %v, want %d panic %v",
						i, st.at, got.DesiredPodCount, got.InPanic, st.want, st.wantPanic)
				}
			}
		})
	}
}

func TestExcessBurstCapacity(t *testing.T) {
	tests := []struct {
		name   string
		tbc    float64
		ready  int32
		panicV float64
		want   int32
	}{
		{name: "TBC > 0 with spare capacity is positive", tbc: 15, ready: 3, panicV: 10, want: 5},
		{name: "TBC > 0 without spare capacity is negative", tbc: 15, ready: 3, panicV: 20, want: -5},
		{name: "TBC > 0 at zero pods is negative", tbc: 15, ready: 0, panicV: 0, want: -15},
		{name: "fractions are floored", tbc: 15, ready: 3, panicV: 10.5, want: 4},
		{name: "TBC 0 is always 0", tbc: 0, ready: 0, panicV: 100, want: 0},
		{name: "TBC -1 is always -1", tbc: -1, ready: 100, panicV: 0, want: -1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// Utilization 50% must not matter: EBC uses the full target.
			spec := kpaSpec(func(s *revision.Spec) { s.TargetBurstCapacity, s.TargetUtilizationPercentage = tc.tbc, 50 })
			var k KPA
			got := k.Step(&spec, conc(0, tc.panicV), tc.ready, t0)
			if got.ExcessBurstCapacity != tc.want {
				t.Errorf("EBC = %d, want %d", got.ExcessBurstCapacity, tc.want)
			}
		})
	}
}

func TestRateBounds(t *testing.T) {
	tests := []struct {
		ready        int32
		up, down     float64
		wantLo, want float64
	}{
		{ready: 0, up: 1000, down: 2, wantLo: 0, want: 1000},
		{ready: 2, up: 1.1, down: 2, wantLo: 1, want: 3},
		{ready: 10, up: 2, down: 2, wantLo: 5, want: 20},
		{ready: 5, up: 1.0, down: 1.0, wantLo: 0, want: 1e300},
	}
	for _, tc := range tests {
		lo, hi := RateBounds(tc.ready, tc.up, tc.down)
		if lo != tc.wantLo || (tc.want < 1e300 && hi != tc.want) || (tc.want >= 1e300 && hi < 1e300) {
			t.Errorf("RateBounds(%d, %v, %v) = [%v, %v], want [%v, %v]", tc.ready, tc.up, tc.down, lo, hi, tc.wantLo, tc.want)
		}
	}
}
