package main

import (
	"math"
	"testing"
)

// TestHistQuantile checks what histQuantile adds to
// harness.HistogramQuantile (whose interpolation harness tests): reading
// the buckets of one histogram out of two scrapes and estimating from
// their difference.
func TestHistQuantile(t *testing.T) {
	const h = "x_seconds"
	b := func(le string) string { return h + `_bucket{le="` + le + `"}` }
	before := map[string]float64{b("0.001"): 5, b("0.002"): 5, b("0.004"): 5, b("+Inf"): 5, "other": 1}
	// Since before: 10 observations, 4 in (0, 1 ms], 6 in (2 ms, 4 ms];
	// "other" and x_seconds_count are not buckets.
	after := map[string]float64{b("0.001"): 9, b("0.002"): 9, b("0.004"): 15, b("+Inf"): 15, "other": 9, h + "_count": 15}
	if got, ok := histQuantile(before, after, h, 0.5); !ok || math.Abs(got-(0.002+0.002/6)) > 1e-9 {
		t.Errorf("p50 of the difference: %v (ok %v), want %v (rank 5: the first of 6 in (2, 4] ms)", got, ok, 0.002+0.002/6)
	}
	if _, ok := histQuantile(after, after, h, 0.5); ok {
		t.Error("no observation in between: ok, want not ok")
	}
	if _, ok := histQuantile(nil, nil, h, 0.5); ok {
		t.Error("no histogram: ok, want not ok")
	}
	// Everything beyond the highest bound: the highest finite bound.
	inf := map[string]float64{b("0.001"): 5, b("0.002"): 5, b("0.004"): 5, b("+Inf"): 8}
	if got, ok := histQuantile(before, inf, h, 0.99); !ok || got != 0.004 {
		t.Errorf("rank in +Inf: %v (ok %v), want 0.004", got, ok)
	}
}
