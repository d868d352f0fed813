package xds

// flipBuckets are the bucket bounds, in seconds, of the flip-to-ACK
// histograms (flip_to_ack_seconds, removal_to_ack_seconds,
// wake_cluster_to_ack_seconds): 1 ms apart from 1 to 10 ms and 2 ms apart
// to 20 ms, where the flip-to-ACK target (≤ 10 ms) is judged, then coarser
// up to 20 s. Doubling buckets (0.5 ms × 2^n) put a 8.65 ms flip in
// (8.2, 16.4] ms, so a p99 over a few flips read 15.6 ms; with these a
// quantile is within 1 ms of the flips' own up to 10 ms.
var flipBuckets = []float64{
	0.0005, 0.001, 0.002, 0.003, 0.004, 0.005, 0.006, 0.007, 0.008, 0.009, 0.010,
	0.012, 0.014, 0.016, 0.018, 0.020, 0.025, 0.030, 0.040, 0.050, 0.075,
	0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20,
}
