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
	type bucket struct{ le, count float64 }
	var bs []bucket
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
		bs = append(bs, bucket{le: le, count: c - before[k]})
	}
	sort.Slice(bs, func(i, j int) bool { return bs[i].le < bs[j].le })
	if len(bs) == 0 {
		return 0, false
	}
	total := bs[len(bs)-1].count // the +Inf bucket, or the highest scraped
	var bounds, cum []float64
	for _, b := range bs {
		if !math.IsInf(b.le, 1) {
			bounds, cum = append(bounds, b.le), append(cum, b.count)
		}
	}
	return harness.HistogramQuantile(bounds, cum, total, q)
}
