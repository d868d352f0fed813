package harness

import (
	"math"
	"testing"
)

func TestHistogramQuantile(t *testing.T) {
	// 10 observations: 4 in (0, 1 ms], 6 in (2 ms, 4 ms].
	bounds := []float64{0.001, 0.002, 0.004}
	cum := []float64{4, 4, 10}
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
		got, ok := HistogramQuantile(bounds, cum, 10, tt.q)
		if !ok || math.Abs(got-tt.want) > 1e-9 {
			t.Errorf("q %v: %v (ok %v), want %v", tt.q, got, ok, tt.want)
		}
	}
	if _, ok := HistogramQuantile(bounds, []float64{0, 0, 0}, 0, 0.5); ok {
		t.Error("nothing observed: ok, want not ok")
	}
	if _, ok := HistogramQuantile(nil, nil, 3, 0.5); ok {
		t.Error("no finite bucket: ok, want not ok")
	}
	// Beyond the highest finite bound: that bound.
	if got, ok := HistogramQuantile(bounds, cum, 13, 0.99); !ok || got != 0.004 {
		t.Errorf("rank in +Inf: %v (ok %v), want 0.004", got, ok)
	}
}
