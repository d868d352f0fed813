package results

import "fmt"

// ScaleLarge is the whole thaw binary (`thaw local` with its Envoy) at
// 100,000 revisions (bench/scenarios scale100k): most idle (initial scale
// 0, no process), a few active ones with real backends under light load,
// and one that is woken and scaled back to zero to cause mode flips.
// Durations are in seconds or milliseconds as named; memory in MiB.
type ScaleLarge struct {
	// Scale holds the idle-fleet figures (Revisions counts the idle ones;
	// ReadySeconds is start to every Envoy ACK).
	Scale
	// Active revisions had min-scale 1 and ActiveRPS requests/s in all
	// through Envoy while everything below was measured; LoadRequests and
	// LoadErrors count that load.
	Active       int   `json:"active"`
	ActiveRPS    int   `json:"activeRPS"`
	LoadRequests int64 `json:"loadRequests"`
	LoadErrors   int64 `json:"loadErrors"`
	// AckTimeoutSeconds is the --xds-ack-timeout thaw ran with (its
	// default closes Envoy's stream during a long initial sync).
	AckTimeoutSeconds float64 `json:"ackTimeoutSeconds"`
	// EnvoySyncCPUSeconds is Envoy's CPU time from its start to thaw's
	// ready (the initial sync).
	EnvoySyncCPUSeconds float64 `json:"envoySyncCPUSeconds"`
	// ThawSyncCPUSeconds is thaw's CPU time (all threads, /proc) from its
	// start to its ready: with EnvoySyncCPUSeconds, what start to every
	// Envoy ACK costs in CPU, whatever the machine's load adds in waiting.
	ThawSyncCPUSeconds float64 `json:"thawSyncCPUSeconds,omitempty"`
	// Tick: thaw was profiled (/debug/pprof/profile) for ProfileSeconds
	// while the idle revisions ticked every TickSeconds. LoopCPUPerTickMs
	// is the CPU of the samples in the decision loops
	// (autoscaler.(*loopShard)) per tick period; ProcessCPUPerTickMs
	// thaw's whole CPU (/proc, all threads: GC, stats ingestion, the
	// activator too) per tick period; DecisionsPerTick the decisions
	// counted (thaw_autoscaler_decisions_total) per tick period.
	TickSeconds         float64 `json:"tickSeconds"`
	ProfileSeconds      float64 `json:"profileSeconds"`
	LoopCPUPerTickMs    float64 `json:"loopCPUPerTickMs"`
	ProcessCPUPerTickMs float64 `json:"processCPUPerTickMs"`
	DecisionsPerTick    float64 `json:"decisionsPerTick"`
	// EnvoyCPUCores is Envoy's CPU over the same time, in cores (its stats
	// flush walks every cluster's stats each second).
	EnvoyCPUCores float64 `json:"envoyCPUCores"`
	// Flips: FlipCycles revisions woken by a request one after the other,
	// then left to go back to zero (BackAtZero of them did). Every ClusterLoadAssignment change is one
	// endpoints response: EndpointPushes responses of EndpointBytes bytes
	// in all; OtherBytes is what the other resource types sent meanwhile
	// (0: a flip touches nothing else). FlipToAck* come from
	// thaw_xds_flip_to_ack_seconds over the cycles (FlipToAckCount
	// changes, quantiles interpolated in its buckets as Prometheus does).
	FlipCycles     int     `json:"flipCycles"`
	BackAtZero     int     `json:"backAtZero"`
	EndpointPushes float64 `json:"endpointPushes"`
	EndpointBytes  float64 `json:"endpointBytes"`
	OtherBytes     float64 `json:"otherBytes"`
	FlipToAckCount float64 `json:"flipToAckCount"`
	FlipToAckP50Ms float64 `json:"flipToAckP50Ms"`
	FlipToAckP99Ms float64 `json:"flipToAckP99Ms"`
	// The same per phase: WakeToAck* while the revisions woke (a backend
	// joined the proxy-mode assignment, then the flip to serve),
	// SleepToAckP99Ms while they went back to zero (the flip to proxy, then
	// the backend left; `thaw local` meanwhile asks Envoy's admin for
	// /clusters to choose the process to stop).
	WakeToAckP50Ms  float64 `json:"wakeToAckP50Ms"`
	WakeToAckP99Ms  float64 `json:"wakeToAckP99Ms"`
	SleepToAckP99Ms float64 `json:"sleepToAckP99Ms"`
	// RemovalToAck* come from thaw_xds_removal_to_ack_seconds over the
	// cycles: returns to zero on the activator module's cluster routes
	// (--idle-hold-path), each timed to the last Envoy's ACK of its
	// cluster's removal, which flip_to_ack_seconds cannot time; 0 on the
	// other paths.
	RemovalToAckCount float64 `json:"removalToAckCount,omitempty"`
	RemovalToAckP50Ms float64 `json:"removalToAckP50Ms,omitempty"`
	RemovalToAckP99Ms float64 `json:"removalToAckP99Ms,omitempty"`
	// WakeOverhead* are the cold-start overheads of the wakes (each
	// flipper's one waking request: its end minus the moment its new
	// backend began listening, as scenario cold measures it), in ms, at
	// this many revisions; p99 of a handful is their maximum.
	WakeOverheadP50Ms float64 `json:"wakeOverheadP50Ms,omitempty"`
	WakeOverheadP99Ms float64 `json:"wakeOverheadP99Ms,omitempty"`
	// WakeClusterToAck* come from thaw_xds_wake_cluster_to_ack_seconds:
	// on the module's cluster routes a revision the autoscaler wants awake
	// gets its cluster before its first backend, timed from that change to
	// the last ACK of its (empty) assignment; the backend's own change is
	// then the wake's flip. 0 on the other paths.
	WakeClusterToAckCount float64 `json:"wakeClusterToAckCount,omitempty"`
	WakeClusterToAckP99Ms float64 `json:"wakeClusterToAckP99Ms,omitempty"`
	// Activator is the activator thaw's Envoy ran (thaw_activator_info:
	// module or extproc; empty when not exported).
	Activator string `json:"activator,omitempty"`
	// Waking and BackToZero are the flip-to-ACK times of the wakes (every
	// change while the revisions woke: thaw_xds_flip_to_ack_seconds; a
	// cluster sent ahead is WakeClusterToAck*) and of the returns to zero
	// (every change while they went back: thaw_xds_flip_to_ack_seconds and,
	// on the module's cluster routes, thaw_xds_removal_to_ack_seconds),
	// whichever activator ran; nil in results older than them.
	Waking     *FlipFigures `json:"waking,omitempty"`
	BackToZero *FlipFigures `json:"backToZero,omitempty"`
	// StatusSeconds is how long one /status answer (every revision) took,
	// MetricsSeconds one /metrics scrape, both before the flips.
	StatusSeconds  float64 `json:"statusSeconds"`
	MetricsSeconds float64 `json:"metricsSeconds"`
	// StageTimeouts counts the make-before-break stages of the flips that
	// ended by thaw's stage timeout (2 s) rather than every Envoy's ACK
	// (thaw_xds_stage_timeouts_total), and RemovalFirstTimeouts the
	// removal-first splits that did (thaw_xds_removal_first_total,
	// timeout and module_timeout): a change queued behind one waited for
	// it, which no run-queue wait explains.
	StageTimeouts        float64 `json:"stageTimeouts"`
	RemovalFirstTimeouts float64 `json:"removalFirstTimeouts"`
}

// BytesPerPush is the mean size of one endpoints response of the flips
// (0 when there was none).
func (s *ScaleLarge) BytesPerPush() float64 {
	if s.EndpointPushes == 0 {
		return 0
	}
	return s.EndpointBytes / s.EndpointPushes
}

// FlipFigures are the flip-to-ACK times of one phase of scenario
// scale100k's flips (the wakes, or the returns to zero), in ms, read from
// thaw's flip-to-ACK histograms over that phase (Histograms names them).
// The quantiles are interpolated in the buckets as Prometheus does; the
// buckets are 1 ms apart up to 10 ms and 2 ms apart to 20 ms
// (docs/metrics.md), so each is within a bucket's width of the changes'
// own. MeanMs is exact (the histograms' sum over their count). The slowest
// change lay in (MaxLowMs, MaxMs]; MaxMs is 0 and MaxLowMs the highest
// finite bound when it was beyond every bound.
type FlipFigures struct {
	Histograms string  `json:"histograms"`
	Count      float64 `json:"count"`
	P50Ms      float64 `json:"p50Ms"`
	P90Ms      float64 `json:"p90Ms"`
	P99Ms      float64 `json:"p99Ms"`
	MeanMs     float64 `json:"meanMs"`
	MaxLowMs   float64 `json:"maxLowMs"`
	MaxMs      float64 `json:"maxMs"`
}

// MaxRange renders where f's slowest change lay: "in (4.0, 5.0] ms", or
// "> 20000.0 ms" beyond every bound.
func MaxRange(f *FlipFigures) string {
	if f.MaxMs == 0 {
		return fmt.Sprintf("> %.1f ms", f.MaxLowMs)
	}
	return fmt.Sprintf("in (%.1f, %.1f] ms", f.MaxLowMs, f.MaxMs)
}
