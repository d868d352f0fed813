// Package autoscaler turns per-revision load samples into desired replica
// counts with Knative's KPA algorithm.
//
// The collector keeps per-second buckets of concurrency and request counts
// from every source (each Envoy through the stats sink, and the activator)
// and answers stable- and panic-window averages. The decider applies the KPA
// rules (target utilization, panic mode, scale rate limits, scale-down delay,
// excess burst capacity); the multiscaler runs one decision loop per
// revision every tick, or at once when poked; the scaler applies decisions to
// a ScaleTarget, gated so that a revision reaches zero only after every Envoy
// confirmed proxy mode for the scale-to-zero grace period.
package autoscaler
