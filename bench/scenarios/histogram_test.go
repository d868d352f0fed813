package main

import (
	"math"
	"testing"
)

func TestHistQuantile(t *testing.T) {
	const h = "x_seconds"
	b := func(le string) string { return h + `_bucket{le="` + le + `"}` }
	before := map[string]float64{b("0.001"): 5, b("0.002"): 5, b("0.004"): 5, b("+Inf"): 5, "other": 1}
	// Since before: 10 observations, 4 in (0, 1 ms], 6 in (2 ms, 4 ms].
	after := map[string]float64{b("0.001"): 9, b("0.002"): 9, b("0.004"): 15, b("+Inf"): 15, "other": 9}
	tests := []struct {
		q    float64
		want float64
	}{
		{0.2, 0.0005},               // rank 2 of 4 in the first bucket
		{0.5, 0.002 + 0.002/6},      // rank 5: the first of 6 in (2, 4] ms
		{0.99, 0.002 + 0.002*5.9/6}, // rank 9.9: 5.9 of 6
		{1, 0.004},
	}
	for _, tt := range tests {
		got, ok := histQuantile(before, after, h, tt.q)
		if !ok || math.Abs(got-tt.want) > 1e-9 {
			t.Errorf("q %v: %v (ok %v), want %v", tt.q, got, ok, tt.want)
		}
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
