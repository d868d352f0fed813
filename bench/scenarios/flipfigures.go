package main

import (
	"fmt"
	"math"
	"strings"

	"github.com/thaw-dev/thaw/bench/results"
	"github.com/thaw-dev/thaw/e2e/harness"
)

// flipFigures summarizes what the flip-to-ACK histograms names observed
// between two scrapes (maps from scrape) in ms: p50/p90/p99 interpolated
// in their summed buckets, the exact mean (their sums over their counts)
// and the bucket the slowest lay in. Nil when nothing was observed.
func flipFigures(before, after map[string]float64, names ...string) *results.FlipFigures {
	bounds, cum, total := histBuckets(before, after, names...)
	if total <= 0 {
		return nil
	}
	f := &results.FlipFigures{Histograms: strings.Join(names, " + "), Count: total}
	for _, p := range []struct {
		q  float64
		to *float64
	}{{0.5, &f.P50Ms}, {0.9, &f.P90Ms}, {0.99, &f.P99Ms}} {
		v, _ := harness.HistogramQuantile(bounds, cum, total, p.q)
		*p.to = v * 1000
	}
	var sum, count float64
	for _, n := range names {
		sum += after[n+"_sum"] - before[n+"_sum"]
		count += after[n+"_count"] - before[n+"_count"]
	}
	if count > 0 {
		f.MeanMs = sum / count * 1000
	}
	low, high, _ := histMax(bounds, cum, total)
	f.MaxLowMs = low * 1000
	if !math.IsInf(high, 1) {
		f.MaxMs = high * 1000
	}
	return f
}

// activatorOf is the activator a scrape's thaw_activator_info names
// (module or extproc), or "" when it has none.
func activatorOf(m map[string]float64) string {
	for k, v := range m {
		rest, ok := strings.CutPrefix(k, "thaw_activator_info{")
		if !ok || v != 1 {
			continue
		}
		_, a, ok := strings.Cut(rest, `activator="`)
		if !ok {
			continue
		}
		if name, _, ok := strings.Cut(a, `"`); ok {
			return name
		}
	}
	return ""
}

// flipLine renders f for the scenario's log.
func flipLine(f *results.FlipFigures) string {
	if f == nil {
		return "none observed"
	}
	return fmt.Sprintf("p50 %.1f / p90 %.1f / p99 %.1f ms, mean %.2f ms, max %s (%.0f changes; %s)",
		f.P50Ms, f.P90Ms, f.P99Ms, f.MeanMs, results.MaxRange(f), f.Count, f.Histograms)
}
