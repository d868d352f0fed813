package main

import (
	"fmt"

	"github.com/thaw-dev/thaw/bench/results"
)

// large100k is the revision count the 100k targets are for; a quick run
// (fewer revisions) is shown but not judged.
const large100k = 100000

// scale100kRows judges the whole binary at 100,000 revisions (scenario
// scale100k, a make bench step of its own) and the in-process added-revision
// benchmark at 100k (BenchmarkServerAddRemove100k, micro-xds).
func scale100kRows(sl *results.ScaleLarge, micro []results.GoBench) []row {
	add, okAdd := results.Find(micro, "/xds", "ServerAddRemove100k")
	ab, okAB := add.Metrics["add-bytes"]
	rb, okRB := add.Metrics["remove-bytes"]
	addRow := row{What: "100k revisions: bytes sent when one revision is added (then removed); in-process xDS server and delta ADS client, no Envoy",
		Measured: fmt.Sprintf("%.0f B (%.0f B); %.2f s per add and remove; initial sync %.0f MiB", ab, rb, add.Metrics["ns/op"]/1e9, add.Metrics["sync-MiB"]),
		Target:   "≤ 10 KiB (the 10k target)", Result: atMost(okAdd && okAB && okRB, max(ab, rb), 10<<10),
		Means: "a new service costs the same bytes at 100k as at 10k (VHDS); `thaw local` cannot add one while it runs, hence in-process"}
	if !okAdd {
		addRow.Measured = "not run"
	}
	if sl == nil {
		return []row{{What: "whole thaw binary at 100k revisions (scenario scale100k)",
			Measured: "not run (`make bench` without `BENCH_SCALE100K=0`, or `bin/bench-scenarios -only scale100k`, built by hack/bench.sh)", Result: missing}, addRow}
	}
	judge := func(r string) string {
		if sl.Revisions < large100k {
			return info
		}
		return r
	}
	// One CLA per flip: any byte of another type fails the row.
	flip := atMost(sl.EndpointPushes > 0, sl.BytesPerPush(), 1024)
	if flip == pass && sl.OtherBytes > 0 {
		flip = fail
	}
	what := fmt.Sprintf("whole thaw binary, %d idle + %d active revisions", sl.Revisions, sl.Active)
	if sl.Revisions < large100k {
		what += " (quick run, not judged)"
	}
	return []row{
		{What: what + ": start to every Envoy ACK",
			Measured: fmt.Sprintf("%.1f s (Envoy's CPU for the sync %.1f s, thaw's %.1f s; thaw ran with --xds-ack-timeout %.0f s)", sl.ReadySeconds, sl.EnvoySyncCPUSeconds, sl.ThawSyncCPUSeconds, sl.AckTimeoutSeconds),
			Target:   "reported", Result: info,
			Means: "how long `thaw local` takes to come up with this many revisions; Envoy's initial sync is most of it"},
		{What: what + ": thaw RSS",
			Measured: fmt.Sprintf("%.0f MiB (peak %.0f; Go heap in use %.0f MiB, %.0f MiB live after a forced GC; %.0f goroutines; Envoy %.0f MiB, %.2f cores while idle)",
				sl.ThawRSSMiB, sl.ThawPeakRSSMiB, sl.HeapInuseMiB, sl.HeapLiveMiB, sl.Goroutines, sl.EnvoyRSSMiB, sl.EnvoyCPUCores),
			Target: "≤ 1 GiB", Result: judge(atMost(true, sl.ThawRSSMiB, 1024)),
			Means: fmt.Sprintf("memory of the control plane after %.0f s of ticking with light load on the active revisions", sl.SettleSeconds)},
		{What: what + ": decider pass (running binary, CPU profile of the decision loops)",
			Measured: fmt.Sprintf("%.0f ms CPU per %.0f s tick (whole process %.0f ms; %.0f decisions per tick, %.2f µs CPU each; %.0f s profiled)",
				sl.LoopCPUPerTickMs, sl.TickSeconds, sl.ProcessCPUPerTickMs, sl.DecisionsPerTick, perDecisionUs(sl), sl.ProfileSeconds),
			Target: "≤ 200 ms CPU", Result: judge(atMost(sl.ProfileSeconds > 0, sl.LoopCPUPerTickMs, 200)),
			Means: "CPU the autoscaler needs to keep every revision on its tick; the whole process adds GC, stats ingestion and the activator"},
		{What: what + ": bytes sent per mode flip",
			Measured: fmt.Sprintf("%.0f B per ClusterLoadAssignment response (%.0f responses; %d revisions woken, %d of them back at zero); other types %.0f B",
				sl.BytesPerPush(), sl.EndpointPushes, sl.FlipCycles, sl.BackAtZero, sl.OtherBytes),
			Target: "one CLA, ≤ 1 KiB", Result: judge(flip),
			Means: "a flip costs one small resource whatever the number of revisions"},
		withAhead(flipRow(what+": waking flip-to-ACK p99 (real Envoy"+activatorLabel(sl)+")", sl.Waking, judge,
			"how soon Envoy routes a waking revision to its first backend at this many revisions: from the change that brings the backend to the last Envoy's ACK"), sl),
		flipRow(what+": back to zero flip-to-ACK p99 (real Envoy"+activatorLabel(sl)+")", sl.BackToZero, judge,
			"how soon every Envoy holds a revision back at zero (its flip to proxy mode, or on the module's cluster routes its cluster's removal), from the change to the last Envoy's ACK"),
		{What: what + ": cold-start overhead of the wakes",
			Measured: fmt.Sprintf("p99 %.1f ms (p50 %.1f ms, %d wakes)", sl.WakeOverheadP99Ms, sl.WakeOverheadP50Ms, sl.FlipCycles),
			Target:   "≤ 20 ms", Result: judge(atMost(sl.FlipCycles > 0 && sl.WakeOverheadP99Ms > 0, sl.WakeOverheadP99Ms, 20)),
			Means: "what thaw and Envoy add to a cold start among this many idle revisions (the response's end minus the new backend's listening)"},
		addRow,
	}
}

// perDecisionUs is the decision loops' CPU per decision, in µs (0 without
// decisions).
func perDecisionUs(sl *results.ScaleLarge) float64 {
	if sl.DecisionsPerTick <= 0 {
		return 0
	}
	return sl.LoopCPUPerTickMs * 1000 / sl.DecisionsPerTick
}

// flipRow judges one phase's flip-to-ACK p99 against the 10 ms target.
func flipRow(what string, f *results.FlipFigures, judge func(string) string, means string) row {
	r := row{What: what, Target: "≤ 10 ms", Means: means}
	if f == nil {
		r.Measured, r.Result = "no change observed (or a result from before this row)", missing
		return r
	}
	r.Measured = fmt.Sprintf("%.1f ms (p50 %.1f, p90 %.1f, mean %.2f ms; slowest %s; %.0f changes; %s, buckets 1 ms apart to 10 ms)",
		f.P99Ms, f.P50Ms, f.P90Ms, f.MeanMs, results.MaxRange(f), f.Count, f.Histograms)
	r.Result = judge(atMost(f.Count > 0, f.P99Ms, 10))
	return r
}

// activatorLabel names the activator of the run for a row's label.
func activatorLabel(sl *results.ScaleLarge) string {
	if sl.Activator == "" {
		return ""
	}
	return ", activator " + sl.Activator
}

// withAhead adds to the waking row the clusters sent ahead of a first
// backend on the module's cluster routes (timed apart: sent while the
// backend starts, so on a wake's path only where its flip waited for it).
func withAhead(r row, sl *results.ScaleLarge) row {
	if sl.WakeClusterToAckCount > 0 {
		r.Measured += fmt.Sprintf("; clusters sent ahead of the first backend ACKed p99 %.1f ms (%.0f, thaw_xds_wake_cluster_to_ack_seconds)",
			sl.WakeClusterToAckP99Ms, sl.WakeClusterToAckCount)
	}
	return r
}
