package main

import (
	"math"
	"sort"
	"strconv"
	"strings"
)

// histQuantile estimates quantile q of what a Prometheus histogram
// observed between two scrapes (maps from scrape): the bucket counts of
// after minus those of before, interpolated linearly inside the bucket that
// holds the rank, as PromQL's histogram_quantile does; a rank in the +Inf
// bucket gives the highest finite bound. ok is false when nothing was
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
	if len(bs) == 0 || bs[len(bs)-1].count <= 0 {
		return 0, false
	}
	rank := q * bs[len(bs)-1].count
	lower, below := 0.0, 0.0
	for i, b := range bs {
		if b.count >= rank {
			if math.IsInf(b.le, 1) {
				if i == 0 {
					return 0, false
				}
				return bs[i-1].le, true
			}
			if b.count == below {
				return b.le, true
			}
			return lower + (b.le-lower)*(rank-below)/(b.count-below), true
		}
		lower, below = b.le, b.count
	}
	return lower, true
}
