package main

import (
	"math"
	"testing"
)

// TestFlipFigures checks the per-phase flip figures: two histograms with
// the same bounds summed bucket by bucket, the difference of two scrapes,
// quantiles interpolated in 1 ms buckets, the exact mean from the sums and
// the bucket holding the slowest change.
func TestFlipFigures(t *testing.T) {
	b := func(h, le string) string { return h + `_bucket{le="` + le + `"}` }
	const f, r = "flip_seconds", "removal_seconds"
	before := map[string]float64{b(f, "0.001"): 2, b(f, "0.002"): 2, b(f, "0.009"): 2, b(f, "0.01"): 2, b(f, "+Inf"): 2,
		f + "_sum": 0.002, f + "_count": 2}
	// Since before: flips 1.5 ms and 8.65 ms; removals 0.5, 1.2, 1.8 ms.
	after := map[string]float64{
		b(f, "0.001"): 2, b(f, "0.002"): 3, b(f, "0.009"): 4, b(f, "0.01"): 4, b(f, "+Inf"): 4,
		f + "_sum": 0.002 + 0.0015 + 0.00865, f + "_count": 4,
		b(r, "0.001"): 1, b(r, "0.002"): 3, b(r, "0.009"): 3, b(r, "0.01"): 3, b(r, "+Inf"): 3,
		r + "_sum": 0.0005 + 0.0012 + 0.0018, r + "_count": 3,
	}
	got := flipFigures(before, after, f, r)
	if got == nil {
		t.Fatal("nil, want figures of 5 changes")
	}
	near := func(what string, v, want float64) {
		t.Helper()
		if math.Abs(v-want) > 1e-6 {
			t.Errorf("%s: %v, want %v", what, v, want)
		}
	}
	near("count", got.Count, 5)
	// Rank 2.5 of 5: half-way through the 3 changes in (1, 2] ms.
	near("p50", got.P50Ms, 1+0.5)
	// Rank 4.5: half-way through the one change in (2, 9] ms.
	near("p90", got.P90Ms, 2+7*0.5)
	near("p99", got.P99Ms, 2+7*0.95)
	near("mean", got.MeanMs, (1.5+8.65+0.5+1.2+1.8)/5)
	near("max low", got.MaxLowMs, 2)
	near("max", got.MaxMs, 9)
	if got.Histograms != f+" + "+r {
		t.Errorf("histograms %q", got.Histograms)
	}
	if flipFigures(after, after, f, r) != nil {
		t.Error("nothing observed in between: figures, want nil")
	}
	// The slowest beyond every finite bound: no upper bound.
	inf := map[string]float64{b(f, "0.001"): 0, b(f, "0.01"): 1, b(f, "+Inf"): 2, f + "_sum": 30.005, f + "_count": 2}
	if got := flipFigures(nil, inf, f); got == nil || got.MaxMs != 0 || got.MaxLowMs != 10 {
		t.Errorf("beyond every bound: %+v, want max 0 above 10 ms", got)
	}
}

// TestHistMax checks the bucket of the slowest observation.
func TestHistMax(t *testing.T) {
	for _, c := range []struct {
		name        string
		bounds, cum []float64
		total       float64
		low, high   float64
		ok          bool
	}{
		{"first bucket", []float64{1, 2}, []float64{3, 3}, 3, 0, 1, true},
		{"middle", []float64{1, 2, 4}, []float64{1, 2, 2}, 2, 1, 2, true},
		{"beyond", []float64{1, 2}, []float64{1, 1}, 2, 2, math.Inf(1), true},
		{"empty", []float64{1, 2}, []float64{0, 0}, 0, 0, 0, false},
	} {
		low, high, ok := histMax(c.bounds, c.cum, c.total)
		if low != c.low || high != c.high || ok != c.ok {
			t.Errorf("%s: (%v, %v] ok %v, want (%v, %v] ok %v", c.name, low, high, ok, c.low, c.high, c.ok)
		}
	}
}

// TestActivatorOf reads the activator from thaw_activator_info.
func TestActivatorOf(t *testing.T) {
	for _, c := range []struct {
		m    map[string]float64
		want string
	}{
		{map[string]float64{`thaw_activator_info{activator="module",fallback_reason=""}`: 1}, "module"},
		{map[string]float64{`thaw_activator_info{activator="extproc",fallback_reason="module_missing"}`: 1, "x": 1}, "extproc"},
		{map[string]float64{`thaw_activator_info{activator="module",fallback_reason=""}`: 0}, ""},
		{nil, ""},
	} {
		if got := activatorOf(c.m); got != c.want {
			t.Errorf("%v: %q, want %q", c.m, got, c.want)
		}
	}
}
