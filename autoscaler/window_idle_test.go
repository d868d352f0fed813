package autoscaler

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestWindowsIdleShortcut checks on random histories (mostly idle, with
// bursts, several sources, gaps, late samples) that windows answers exactly
// what the full scan of the ring answers, whether or not it took the
// shortcut for windows that start after the last nonzero value's reach.
func TestWindowsIdleShortcut(t *testing.T) {
	const expiry, window, panicW = 10, 60, 6
	shortcuts := 0
	for _, alg := range []Algorithm{AlgorithmLinear, AlgorithmWeightedExponential} {
		for seed := range uint64(200) {
			rng := rand.New(rand.NewPCG(seed, 7))
			s := &series{ring: newRing(window + expiry + 2), sources: map[string]*source{}, activeUntil: math.MinInt64}
			sec := int64(1_800_000_000)
			for step := range 400 {
				sec += int64(rng.IntN(3)) // 0: same second, 2: a gap
				if rng.IntN(40) == 0 {
					sec += int64(rng.IntN(90)) // a long silence
				}
				var conc, reqs float64
				if rng.IntN(25) == 0 { // a burst now and then
					conc, reqs = float64(rng.IntN(50)), float64(rng.IntN(200))
				}
				at := sec
				if rng.IntN(10) == 0 {
					at -= int64(rng.IntN(5)) // late sample
				}
				hint := rng.IntN(4) // any hint must be safe
				s.record(at, []string{"a", "b", "c"}[rng.IntN(3)], conc, reqs, expiry, window, &hint)
				now := sec + int64(rng.IntN(2))
				got, gotErr := s.windows(now, window, panicW, expiry, alg)
				saved := s.activeUntil
				s.activeUntil = math.MaxInt64 // force the full scan
				want, wantErr := s.windows(now, window, panicW, expiry, alg)
				s.activeUntil = saved
				if got != want || (gotErr == nil) != (wantErr == nil) {
					t.Fatalf("%s seed %d step %d: windows = %+v, %v; full scan %+v, %v", alg, seed, step, got, gotErr, want, wantErr)
				}
				if ref := now - 1; gotErr == nil && saved < ref-window+1 {
					shortcuts++
				}
			}
		}
	}
	if shortcuts == 0 {
		t.Fatal("no history reached the idle shortcut: the test checks nothing")
	}
}
