// Package autoscaler turns per-revision load samples into desired replica
// counts with Knative's KPA algorithm.
//
// The collector keeps per-second buckets of concurrency and request counts
// from every source (each Envoy through the stats sink, and the activator)
// and answers stable- and panic-window averages. The decider applies the KPA
// rules (target utilization, panic mode, scale rate limits, scale-down delay,
// excess burst capacity); the multiscaler decides every revision every tick,
// or at once when poked, from a few clock-driven loops (one per CPU, at most
// eight; no goroutine, timer or channel per revision), and applies decisions
// to a ScaleTarget, gated so that a revision reaches zero only after every
// Envoy confirmed proxy mode for the scale-to-zero grace period.
//
// # Pipeline
//
//	Record(Sample) ─► Collector ─► StableAndPanic ─► KPA.Step ─► Result
//	                                                                      │
//	ScaleTarget.GetScale ─► current, ready ─────────────────► Gate ◄──────┘
//	ModeConfirmer.ProxyConfirmedSince ──────────────────────►  │
//	                                                           ▼
//	                  Decision ─► ScaleTarget.SetScale (when it differs)
//	                           ─► registry (when it changed) through the Recorder
//	                              (mode control: desired scale and mode in one
//	                              update); then OnDecision subscribers
//
// Replicas come from ScaleTarget.GetScale, or from the revision's
// ScaleReader when the target implements ScaleHandles (resolved once per
// revision: no lookup by key on every tick).
//
// # Collector
//
// Within one second, the concurrency samples of one source are averaged; a
// source that did not report in a second counts with its last value for up
// to SourceExpiry; sources are summed. Request counts are deltas, summed.
// A window covers the last N seconds, clipped to the revision's data (from
// its first sample to the newest reported second); empty seconds inside
// count as zero. No data in the stable window is ErrNoData: the autoscaler
// never scales on missing data. Averaging is linear or weighted-exponential
// (see Algorithm for the decay rule). Record takes two short locks and does
// not allocate; memory per revision is a ring of one bucket per second of
// the longest stable window asked for.
//
// # Decider (KPA)
//
// KPA.Step follows Knative: desired = ceil(observed / (target ×
// utilization)) within the scale rate bounds, panic mode when the panic
// desired count reaches the panic threshold times the ready pods, no
// scale-down while panicking, the scale-down delay as a sliding maximum, and
// excess burst capacity from the full per-pod target.
//
// # Gate and mode control
//
// Gate applies min/max scale, the initial scale until reached, the
// activation scale as the lowest non-zero scale, and the scale-to-zero gate.
// A Decision carries both what the decider wants and what is applied:
// WantZero (the revision is idle and should go to zero: put it in proxy
// mode) and Recommended (bounded, before the gate) next to DesiredScale
// (applied). Mode control switches a revision to proxy mode on WantZero or a
// negative ExcessBurstCapacity; once every Envoy confirmed proxy mode for
// ScaleToZeroGracePeriod, DesiredScale follows to 0. A request arriving at
// zero calls Poke, which decides at once and wakes the revision to at least
// ActivationScale even before its first sample arrives.
//
// # Dormant revisions
//
// A revision at zero replicas (none desired, recommended or ready) with no
// stats in reach of its stable window, no wake-up in progress and no poke
// decides the same thing on every tick. After such a tick it leaves its
// loop and is dormant (MetricRevisionsDormant, Multiscaler.Dormant),
// costing no decision until one of the inputs that can change its
// decision wakes it: a sample recorded for it (the stats sink, the
// module's held counts, the ext_proc hold path's report), a change of its
// registry entry (spec, backends, mode, desired scale, wake failure), a
// poke, or, when its wake policy has warm windows, its alarm: the next
// time one opens or closes (wake.Policy.NextChange), kept in the loop's
// due heap so that one timer per loop serves every alarm. A woken
// revision is decided at once, then every tick, and may go dormant again. dormant.go says how the wake and the
// tick that settles a revision never miss each other.
//
// # Metrics
//
// Read at scrape time from the decision state (a decision updates no
// metric). Always: cluster-wide counts and sums (revisions by state, in
// panic, without data; pods desired, recommended and ready; observed
// concurrency and RPS; applied scale changes, scale target failures,
// decisions). With MultiscalerOptions.RevisionMetrics also one series per
// revision (label revision="namespace/name") for each Metric* per-revision
// name. docs/metrics.md lists them.
package autoscaler
