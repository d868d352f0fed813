package main

import (
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/thaw-dev/thaw/e2e/harness"
)

// histQuantile estimates quantile q of what a Prometheus histogram
// observed between two scrapes (maps from scrape): the bucket counts of
// after minus those of before, estimated as e2e does
// (harness.HistogramQuantile: PromQL's histogram_quantile; a rank in the
// +Inf bucket gives the highest finite bound). ok is false when nothing was
// observed in between.
func histQuantile(before, after map[string]float64, name string, q float64) (v float64, ok bool) {
	bounds, cum, total := histBuckets(before, after, name)
	return harness.HistogramQuantile(bounds, cum, total, q)
}

// histBuckets returns what the histograms names observed between two
// scrapes, summed bucket by bucket: the finite bounds in increasing order
// (seconds), the cumulative count at each, and the total (the +Inf
// bucket, or the highest scraped). Histograms summed must share their
// bounds. No bucket gives nil bounds.
func histBuckets(before, after map[string]float64, names ...string) (bounds, cum []float64, total float64) {
	type bucket struct{ le, count float64 }
	byLe := map[float64]float64{}
	for _, name := range names {
		prefix := name + `_bucket{le="`
		for k, c := range after {
			rest, found := strings.CutPrefix(k, prefix)
			if !found {
				continue
			}
			le, err := strconv.ParseFloat(strings.TrimSuffix(rest, `"}`), 64)
			if err != nil {
				continue
			}
			byLe[le] += c - before[k]
		}
	}
	bs := make([]bucket, 0, len(byLe))
	for le, c := range byLe {
		bs = append(bs, bucket{le, c})
	}
	sort.Slice(bs, func(i, j int) bool { return bs[i].le < bs[j].le })
	if len(bs) == 0 {
		return nil, nil, 0
	}
	total = bs[len(bs)-1].count
	for _, b := range bs {
		if !math.IsInf(b.le, 1) {
			bounds, cum = append(bounds, b.le), append(cum, b.count)
		}
	}
	return bounds, cum, total
}

// histMax bounds the slowest observation of buckets from histBuckets: it
// lay in (low, high]. When it was beyond every finite bound, high is
// +Inf and low the highest finite bound; ok is false when nothing was
// observed.
func histMax(bounds, cum []float64, total float64) (low, high float64, ok bool) {
	if total <= 0 {
		return 0, 0, false
	}
	for i, le := range bounds {
		if cum[i] >= total {
			if i > 0 {
				low = bounds[i-1]
			}
			return low, le, true
		}
	}
	if len(bounds) > 0 {
		low = bounds[len(bounds)-1]
	}
	return low, math.Inf(1), true
}
