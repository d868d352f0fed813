package xds

import (
	"slices"

	"github.com/prometheus/client_golang/prometheus"
)

// flipBuckets are the bucket bounds, in seconds, of the flip-to-ACK
// histograms (flip_to_ack_seconds, removal_to_ack_seconds,
// wake_cluster_to_ack_seconds): the doubling bounds they always had
// (0.5 ms × 2^n up to 16.4 s, kept so no existing `le` series goes away)
// plus bounds that make them 1 ms apart from 1 to 10 ms and 2 ms apart to
// 20 ms, where the flip-to-ACK target (≤ 10 ms) is judged. With doubling
// bounds alone a 8.65 ms flip lay in (8, 16] ms, so a p99 over a few
// flips read 15.6 ms; now a quantile there is within 1 ms of the flips'
// own.
var flipBuckets = withBounds(prometheus.ExponentialBuckets(0.0005, 2, 16),
	0.003, 0.005, 0.006, 0.007, 0.009, 0.010, 0.012, 0.014, 0.018, 0.020, 0.025)

// withBounds returns bounds with extra added, sorted, each once.
func withBounds(bounds []float64, extra ...float64) []float64 {
	out := slices.Concat(bounds, extra)
	slices.Sort(out)
	return slices.Compact(out)
}
