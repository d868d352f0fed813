package main

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/thaw-dev/thaw/bench/results"
)

// Verdicts of a target row.
const (
	pass    = "pass"
	fail    = "**FAIL**"
	missing = "not measured"
	info    = "–"
)

// row is one figure beside its target.
type row struct {
	What     string
	Measured string
	Target   string
	Result   string
	Means    string
}

// atMost and atLeast judge v against a limit; have=false means the figure
// is missing.
func atMost(have bool, v, limit float64) string {
	switch {
	case !have:
		return missing
	case v <= limit:
		return pass
	default:
		return fail
	}
}

func atLeast(have bool, v, limit float64) string {
	switch {
	case !have:
		return missing
	case v >= limit:
		return pass
	default:
		return fail
	}
}

// inputs is everything the report is built from.
type inputs struct {
	Scenarios *results.Scenarios
	Micro     []results.GoBench
	XDS       []results.GoBench
}

// pathRows compares the request-path sides. Each figure is the median
// over rounds of the per-round comparison (the sides of a round ran back to
// back, so they met the same background load); the pooled figures of all
// rounds are shown beside it.
func pathRows(p *results.Paths) []row {
	if p == nil {
		return []row{{What: "warm path and activator path", Measured: "not run", Result: missing}}
	}
	st, sv, sp, px := p.Static, p.Serve, p.ServeWithProxy, p.Proxy
	rounds := fmt.Sprintf("median of %d rounds", len(sv.RoundP50Ms))
	p50r, ok50 := results.MedianRatio(sv.RoundP50Ms, st.RoundP50Ms)
	p99r, ok99 := results.MedianRatio(sv.RoundP99Ms, st.RoundP99Ms)
	tr, okT := results.MedianRatio(sv.RoundThroughput, st.RoundThroughput)
	add50, okA50 := results.MedianDiff(px.RoundP50Ms, sp.RoundP50Ms)
	add99, okA99 := results.MedianDiff(px.RoundP99Ms, sp.RoundP99Ms)
	pt, okPT := results.MedianRatio(px.RoundThroughput, sp.RoundThroughput)
	tRounds := fmt.Sprintf("median of %d rounds", len(sv.RoundThroughput))
	return []row{
		{What: fmt.Sprintf("warm path p50 latency, serve mode / static Envoy (%d rps)", p.RateRPS),
			Measured: fmt.Sprintf("%.3f (%s; all requests: %.3f vs %.3f ms)", p50r, rounds, sv.Latency.P50Ms, st.Latency.P50Ms),
			Target:   "≤ 1.01", Result: atMost(ok50, p50r, 1.01),
			Means: "what a typical warm request pays for running on thaw (1.00 = nothing; Envoy routes straight to the backend)"},
		{What: fmt.Sprintf("warm path p99 latency, serve mode / static Envoy (%d rps)", p.RateRPS),
			Measured: fmt.Sprintf("%.3f (%s; all requests: %.3f vs %.3f ms)", p99r, rounds, sv.Latency.P99Ms, st.Latency.P99Ms),
			Target:   "≤ 1.01", Result: atMost(ok99, p99r, 1.01),
			Means: "the same for the slowest 1% of warm requests (the most noise-sensitive figure on a shared machine)"},
		{What: fmt.Sprintf("warm path throughput, serve mode / static Envoy (%d in flight)", p.Concurrency),
			Measured: fmt.Sprintf("%.3f (%s; mean %.0f vs %.0f req/s)", tr, tRounds, sv.ThroughputRPS, st.ThroughputRPS),
			Target:   "≥ 0.95", Result: atLeast(okT, tr, 0.95),
			Means: "requests/s one Envoy passes to a warm backend with thaw's configuration vs a minimal one"},
		warmCPURow(fmt.Sprintf("warm path Envoy CPU per request, serve mode / static Envoy (%d in flight)", p.Concurrency), sv, st,
			"CPU thaw's Envoy spends per warm request against a minimal static Envoy (user + system time from /proc over the closed-loop rounds; the figure that holds on a loaded machine)"),
		{What: fmt.Sprintf("activator path: added p50 latency, proxy mode − serve mode (%d rps)", p.RateRPS),
			Measured: fmt.Sprintf("%+.3f ms (%s; all requests: %.3f vs %.3f ms)", add50, rounds, px.Latency.P50Ms, sp.Latency.P50Ms),
			Target:   "≤ +0.3 ms", Result: atMost(okA50, add50, 0.3),
			Means: "extra latency per request while a revision is in proxy mode (at zero, overloaded, or target-burst-capacity -1)"},
		{What: fmt.Sprintf("activator path: added p99 latency, proxy mode − serve mode (%d rps)", p.RateRPS),
			Measured: fmt.Sprintf("%+.3f ms (%s; all requests: %.3f vs %.3f ms)", add99, rounds, px.Latency.P99Ms, sp.Latency.P99Ms),
			Target:   "≤ +1 ms", Result: atMost(okA99, add99, 1),
			Means: "the same for the slowest 1%"},
		{What: fmt.Sprintf("activator path throughput, proxy / serve mode (%d in flight)", p.Concurrency),
			Measured: fmt.Sprintf("%.0f%% (%s; mean %.0f vs %.0f req/s)", 100*pt, tRounds, px.ThroughputRPS, sp.ThroughputRPS),
			Target:   "≥ 70%", Result: atLeast(okPT, pt, 0.70),
			Means: "how much traffic Envoy and thaw pass through the activator compared with direct routing"},
		{What: fmt.Sprintf("activator path: thaw CPU per request (%d in flight)", p.Concurrency),
			Measured: cpuCell(px.ThawCPUUsPerRequest, px.CPURequests, fmt.Sprintf("serve mode %.1f µs", sp.ThawCPUUsPerRequest)),
			Target:   "≤ 15 µs (goal)", Result: atMost(px.CPURequests > 0, px.ThawCPUUsPerRequest, 15),
			Means: "CPU thaw's activator spends per proxy-mode request (user + system time from /proc over the closed-loop rounds)"},
		{What: fmt.Sprintf("activator path: Envoy CPU per request, proxy / serve mode (%d in flight)", p.Concurrency),
			Measured: cpuCell(px.EnvoyCPUUsPerRequest, px.CPURequests, fmt.Sprintf("%.2f× serve mode's %.1f µs; static Envoy %.1f µs",
				px.EnvoyCPUUsPerRequest/max(sp.EnvoyCPUUsPerRequest, 1e-9), sp.EnvoyCPUUsPerRequest, st.EnvoyCPUUsPerRequest)),
			Target: "reported", Result: map[bool]string{true: info, false: missing}[px.CPURequests > 0 && sp.EnvoyCPUUsPerRequest > 0],
			Means: "what the activator path costs Envoy itself per request compared with routing straight to the backend"},
	}
}

// warmCPURow judges a warm path's Envoy CPU per request against its
// baseline's: the median over closed-loop rounds of the per-round ratio,
// at most 1.05 (issue 27).
func warmCPURow(what string, side, base results.Side, means string) row {
	r, ok := results.EnvoyCPURatio(side, base)
	measured := "not measured"
	if ok && side.CPURequests > 0 {
		measured = fmt.Sprintf("%.3f (median of %d rounds; pooled %.1f vs %.1f µs per request; %d requests)", r, len(side.RoundEnvoyCPUUs),
			side.EnvoyCPUUsPerRequest, base.EnvoyCPUUsPerRequest, side.CPURequests)
	}
	return row{What: what, Measured: measured,
		Target: "≤ 1.05", Result: atMost(ok && side.CPURequests > 0, r, 1.05), Means: means}
}

// cpuCell renders a CPU-per-request figure with what it is compared with.
func cpuCell(us float64, n int64, vs string) string {
	if n == 0 {
		return "not measured"
	}
	return fmt.Sprintf("%.1f µs (%s; %d requests)", us, vs, n)
}

// pathRound is one latency round of the two pairs, "p50 / p99" in ms.
type pathRound struct {
	N                                    int
	Static, Serve, ServeWithProxy, Proxy string
	// ServeWithModule and Module are empty when the module did not run.
	ServeWithModule, Module string
}

func pathRounds(p *results.Paths) []pathRound {
	if p == nil {
		return nil
	}
	cell := func(s results.Side, i int) string {
		if i >= len(s.RoundP50Ms) || i >= len(s.RoundP99Ms) {
			return ""
		}
		return fmt.Sprintf("%.3f / %.2f", s.RoundP50Ms[i], s.RoundP99Ms[i])
	}
	var out []pathRound
	for i := range len(p.Serve.RoundP50Ms) {
		r := pathRound{N: i + 1, Static: cell(p.Static, i), Serve: cell(p.Serve, i),
			ServeWithProxy: cell(p.ServeWithProxy, i), Proxy: cell(p.Proxy, i)}
		if p.Module != nil && p.ServeWithModule != nil {
			r.ServeWithModule, r.Module = cell(*p.ServeWithModule, i), cell(*p.Module, i)
		}
		out = append(out, r)
	}
	return out
}

// coldRows judges the cold-start overhead per startup delay.
func coldRows(cs []results.Cold) []row {
	if len(cs) == 0 {
		return []row{{What: "cold-start overhead", Measured: "not run", Result: missing}}
	}
	var rows []row
	for _, c := range cs {
		ok := c.N > 0 && c.Errors == 0
		measured := fmt.Sprintf("p99 %.1f ms (p50 %.1f ms, n=%d)", c.OverheadP99Ms, c.OverheadP50Ms, c.N)
		if c.Errors > 0 {
			measured += fmt.Sprintf(", %d failed", c.Errors)
		}
		rows = append(rows, row{
			What:     fmt.Sprintf("cold-start overhead, backend startup delay %s", fmtMs(c.StartupDelayMs)),
			Measured: measured, Target: "≤ 20 ms p99 (local)", Result: atMost(ok, c.OverheadP99Ms, 20),
			Means: fmt.Sprintf("a request to a revision at zero waits the app's own startup plus this (end to end p50 %s)", fmtMs(c.TotalP50Ms)),
		})
	}
	return rows
}

// burstRows judges the burst from zero.
func burstRows(b *results.Burst) []row {
	if b == nil {
		return []row{{What: "burst from zero", Measured: "not run", Result: missing}}
	}
	allServed := fail
	if b.AllServedMs > 0 && b.Errors == 0 {
		allServed = pass
	}
	rows := []row{
		{What: fmt.Sprintf("burst from zero: %d requests at once, errors", b.Requests),
			Measured: fmt.Sprintf("%d", b.Errors), Target: "0", Result: atMost(true, float64(b.Errors), 0),
			Means: "no request of a sudden burst against an idle service is lost"},
		{What: "burst from zero: time until all are served",
			Measured: fmt.Sprintf("%.2f s (first response %.2f s, p50 latency %.2f s)", b.AllServedMs/1000, b.FirstServedMs/1000, b.LatencyP50Ms/1000),
			Target:   "all served", Result: allServed,
			Means: "how long the burst takes end to end, including starting backends from zero"},
		{What: "burst from zero: time to desired scale (autoscaler decision)",
			Measured: fmt.Sprintf("%.2f s (desired %d)", b.TimeToDesiredMs/1000, b.DesiredMax),
			Target:   "≤ 2 s (one tick)", Result: atMost(b.TimeToDesiredMs >= 0, b.TimeToDesiredMs, 2000),
			Means: "how fast the autoscaler asks for the backends the burst needs"},
		{What: "burst from zero: time until that many backends are ready",
			Measured: fmtSeconds(b.TimeToReadyMs), Target: "", Result: info,
			Means: "decision plus process start and readiness"},
	}
	if b.ContainerConcurrency > 0 {
		rows = append(rows, row{What: "burst from zero: most requests at one backend at once",
			Measured: fmt.Sprintf("%d", b.BackendMaxInFlight),
			Target:   fmt.Sprintf("≤ %d (container-concurrency)", b.ContainerConcurrency),
			Result:   atMost(b.BackendMaxInFlight > 0, float64(b.BackendMaxInFlight), float64(b.ContainerConcurrency)),
			Means:    "container-concurrency is a hard limit the activator enforces; above it the app gets more than it said it can take"})
	}
	return rows
}

// microRows judges the component targets measured by Go benchmarks.
func microRows(micro, xds []results.GoBench) []row {
	var rows []row
	ing, ok := results.Find(micro, "/autoscaler/statsink", "IngestGRPC")
	v := ing.Metrics["samples/cpu-s"]
	rows = append(rows, row{What: "stats ingestion through a gRPC stream into the real collector (10k revisions, one Envoy flush per op; receiving process only, the sender runs apart)",
		Measured: fmt.Sprintf("%s samples per CPU-second (%s/s wall)", human(v), human(ing.Metrics["samples/s"])),
		Target:   "≥ 1M samples/s per core", Result: atLeast(ok && v > 0, v, 1e6),
		Means: fmt.Sprintf("CPU thaw spends on Envoy stats: 10k revisions × 20 Envoys, flushed every second, need %.2f core", 200000/math.Max(v, 1))})
	for _, t := range []struct {
		name, label string
		target      float64
	}{{"TickLoop/10k", "10k", 20}, {"TickLoop/100k", "100k", 200}} {
		tick, ok := results.Find(micro, "/autoscaler", t.name)
		cpu := tick.Metrics["cpu-ms/tick"]
		rows = append(rows, row{What: "decider: one tick over " + t.label + " revisions (production loop, real registry and local platform)",
			Measured: fmt.Sprintf("%.1f ms CPU (%.1f ms wall)", cpu, tick.Metrics["ms/tick"]),
			Target:   fmt.Sprintf("≤ %.0f ms (judged on CPU time)", t.target), Result: atMost(ok && cpu > 0, cpu, t.target),
			Means: "the autoscaler keeps its 2 s decision period with " + t.label + " revisions"})
	}
	x, ok := results.Find(xds, "/e2e", "XDSEnvoy10k")
	get := func(k string) (float64, bool) { v, has := x.Metrics[k]; return v, ok && has }
	fb, okFB := get("flip-bytes")
	rows = append(rows, row{What: "xDS at 10k revisions: bytes sent for one mode flip",
		Measured: fmt.Sprintf("%.0f B", fb), Target: "one CLA, ≤ 1 KiB", Result: atMost(okFB, fb, 1024),
		Means: "a flip costs the same with 10 or 10k revisions"})
	ab, okAB := get("add-bytes")
	rb, okRB := get("remove-bytes")
	rows = append(rows, row{What: "xDS at 10k revisions: bytes sent when one revision is added (then removed)",
		Measured: fmt.Sprintf("%.0f B (%.0f B)", ab, rb), Target: "≤ 10 KiB", Result: atMost(okAB && okRB, max(ab, rb), 10<<10),
		Means: "a new service costs Envoy one cluster, one CLA and one virtual host (VHDS), not the whole route table"})
	// Flip-to-ACK: the xDS server's thaw_xds_flip_to_ack_seconds (changed
	// ClusterLoadAssignment cached to the last ACK), reported as
	// push-ack-*; older runs called it flip-ack-*. flip-e2e-* adds the
	// registry's holdoff and publication (SetMode to confirmed).
	first := func(keys ...string) (float64, bool) {
		for _, k := range keys {
			if v, ok := get(k); ok {
				return v, true
			}
		}
		return 0, false
	}
	for _, q := range []string{"p50", "p99"} {
		v, okV := first("push-ack-"+q+"-ms", "flip-ack-"+q+"-ms")
		measured := fmt.Sprintf("%.1f ms", v)
		if e2e, ok := get("flip-e2e-" + q + "-ms"); ok {
			measured += fmt.Sprintf(" (%.1f ms from SetMode, registry holdoff included)", e2e)
		}
		rows = append(rows, row{What: "xDS at 10k revisions: flip-to-ACK " + q + " (real Envoy)",
			Measured: measured, Target: "≤ 10 ms", Result: atMost(okV, v, 10),
			Means: map[string]string{
				"p50": "how soon Envoy routes the new way after thaw decides (wake-up and scale-to-zero wait on it)",
				"p99": "the same for the slowest 1% of flips",
			}[q]})
	}
	sync, okS := get("sync-ms")
	rows = append(rows, row{What: "xDS at 10k revisions: initial sync (Envoy start to ACK)",
		Measured: fmtSeconds(sync), Target: "≤ 2 s", Result: atMost(okS, sync, 2000),
		Means: "a new or restarted Envoy has all 10k revisions this soon"})
	rss, okR := get("rss-MiB")
	rows = append(rows, row{What: "xDS server alone at 10k revisions: RSS (in-process benchmark)",
		Measured: fmt.Sprintf("%.0f MiB", rss), Target: "≤ 200 MiB", Result: atMost(okR, rss, 200),
		Means: "memory of the registry and xDS state for 10k revisions; the whole binary is the last row"})
	return rows
}

// microTable lists every Go benchmark result with its metrics.
type microLine struct {
	Pkg, Name, N, NsOp, Metrics string
}

func microTable(bs []results.GoBench) []microLine {
	var out []microLine
	for _, b := range bs {
		var ms []string
		keys := make([]string, 0, len(b.Metrics))
		for k := range b.Metrics {
			if k != "ns/op" {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			ms = append(ms, human(b.Metrics[k])+" "+k)
		}
		out = append(out, microLine{Pkg: strings.TrimPrefix(b.Pkg, "github.com/thaw-dev/thaw/"), Name: b.Name,
			N: fmt.Sprint(b.N), NsOp: human(b.Metrics["ns/op"]), Metrics: strings.Join(ms, ", ")})
	}
	return out
}

// human prints v with 3-4 significant digits and k/M/G suffixes.
func human(v float64) string {
	a := math.Abs(v)
	switch {
	case a >= 1e9:
		return fmt.Sprintf("%.3gG", v/1e9)
	case a >= 1e6:
		return fmt.Sprintf("%.3gM", v/1e6)
	case a >= 1e4:
		return fmt.Sprintf("%.3gk", v/1e3)
	case a == math.Trunc(a):
		return fmt.Sprintf("%.0f", v)
	default:
		return fmt.Sprintf("%.3g", v)
	}
}

func fmtMs(ms float64) string {
	if ms >= 1000 {
		return fmtSeconds(ms)
	}
	return fmt.Sprintf("%.0f ms", ms)
}

func fmtSeconds(ms float64) string {
	if ms < 0 {
		return "never"
	}
	return fmt.Sprintf("%.2f s", ms/1000)
}

// scaleRows judges the whole thaw binary holding many idle revisions.
func scaleRows(sc *results.Scale) []row {
	if sc == nil {
		return []row{{What: "whole thaw binary at 10k revisions", Measured: "not run", Result: missing}}
	}
	return []row{
		{What: fmt.Sprintf("whole thaw binary, %d idle revisions: start to Envoy ACK of everything", sc.Revisions),
			Measured: fmt.Sprintf("%.2f s", sc.ReadySeconds), Target: "initial sync ≤ 2 s", Result: atMost(true, sc.ReadySeconds, 2),
			Means: "how long `thaw local` takes to come up with this many revisions (config parsing and Envoy's start included)"},
		{What: fmt.Sprintf("whole thaw binary, %d idle revisions: RSS", sc.Revisions),
			Measured: fmt.Sprintf("%.0f MiB (peak %.0f; Go heap in use %.0f MiB, goroutine stacks %.0f MiB for %.0f goroutines; Envoy %.0f MiB)",
				sc.ThawRSSMiB, sc.ThawPeakRSSMiB, sc.HeapInuseMiB, sc.StackInuseMiB, sc.Goroutines, sc.EnvoyRSSMiB),
			Target: "≤ 150 MiB", Result: atMost(true, sc.ThawRSSMiB, 150),
			Means: "memory the control plane needs for 10k idle revisions: xDS resources, the activator's per-revision state and the local platform's configuration dominate (no goroutine or Prometheus series per revision)"},
	}
}
