package harness

import "math"

// HistogramQuantile estimates quantile q (0 to 1) of a Prometheus
// histogram as PromQL's histogram_quantile does: linear interpolation
// inside the bucket that holds the rank, the first bucket starting at 0.
// bounds are the finite upper bounds, ascending; cumulative the matching
// cumulative counts; total the count of every observation (the +Inf
// bucket). A rank beyond the last finite bucket gives the highest finite
// bound. ok is false when nothing was observed or there is no finite
// bucket. e2e benchmarks read it from a registry, bench/scenarios from
// scrapes; both use this one estimate.
func HistogramQuantile(bounds, cumulative []float64, total, q float64) (v float64, ok bool) {
	if total <= 0 || len(bounds) == 0 || len(bounds) != len(cumulative) {
		return 0, false
	}
	rank := q * total
	lower, below := 0.0, 0.0
	for i, le := range bounds {
		count := cumulative[i]
		if math.IsInf(le, 1) {
			break
		}
		if count >= rank {
			if count == below {
				return le, true
			}
			return lower + (le-lower)*(rank-below)/(count-below), true
		}
		lower, below = le, count
	}
	return lower, true
}
