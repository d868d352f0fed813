package main

import (
	_ "embed"
	"fmt"

	"github.com/thaw-dev/thaw/bench/results"
)

// protocolsTemplate defines the template "protocols" (the gRPC and
// WebSocket section); BENCHMARKS.md.tmpl includes it.
//
//go:embed protocols.md.tmpl
var protocolsTemplate string

// protocolsView is what the "protocols" template renders (nil: not run).
type protocolsView struct {
	*results.Protocols
	// Rounds are the gRPC warm-path rounds, "p50 / p99" in ms per side.
	Rounds []grpcRound
}

// grpcRound is one gRPC warm-path round.
type grpcRound struct {
	N             int
	Static, Serve string
}

// GRPCSides returns the gRPC warm-path sides, static first (none when that
// part did not run).
func (v *protocolsView) GRPCSides() []results.Side {
	if v.GRPCWarm == nil {
		return nil
	}
	return []results.Side{v.GRPCWarm.Static, v.GRPCWarm.Serve}
}

func newProtocolsView(p *results.Protocols) *protocolsView {
	if p == nil {
		return nil
	}
	v := &protocolsView{Protocols: p}
	if w := p.GRPCWarm; w != nil {
		cell := func(s results.Side, i int) string {
			if i >= len(s.RoundP50Ms) || i >= len(s.RoundP99Ms) {
				return ""
			}
			return fmt.Sprintf("%.3f / %.2f", s.RoundP50Ms[i], s.RoundP99Ms[i])
		}
		for i := range max(len(w.Static.RoundP50Ms), len(w.Serve.RoundP50Ms)) {
			v.Rounds = append(v.Rounds, grpcRound{N: i + 1, Static: cell(w.Static, i), Serve: cell(w.Serve, i)})
		}
	}
	return v
}

// protocolRows judges the gRPC and WebSocket figures against the design's
// targets: cold-start overhead ≤ 20 ms p99 (local), the same as for HTTP;
// gRPC warm path ≤ 1.01 of a static Envoy, p50 and p99. A failed call or
// cold start fails its row. The plain HTTP
// reference row of the same run is shown only in the section.
func protocolRows(p *results.Protocols) []row {
	if p == nil {
		return []row{{What: "gRPC and WebSocket (protocols scenario)", Measured: "not run", Result: missing}}
	}
	var rows []row
	names := map[string]string{"grpc": "gRPC unary call (h2c revision)", "websocket": "WebSocket upgrade"}
	seen := map[string]bool{}
	for _, c := range p.Cold {
		if c.Reference {
			continue
		}
		seen[c.Kind] = true
		measured := fmt.Sprintf("p99 %.1f ms (p50 %.1f ms, n=%d)", c.OverheadP99Ms, c.OverheadP50Ms, c.N)
		if c.Errors > 0 {
			measured += fmt.Sprintf(", %d failed", c.Errors)
		}
		rows = append(rows, row{
			What:     "cold-start overhead, " + names[c.Kind] + ", startup delay 0 ms",
			Measured: measured, Target: "≤ 20 ms p99 (local)", Result: failOn(c.Errors > 0, atMost(c.N > 0, c.OverheadP99Ms, 20)),
			Means: fmt.Sprintf("a %s to a revision at zero waits the app's own startup plus this (end to end p50 %s)",
				names[c.Kind], fmtMs(c.TotalP50Ms)),
		})
	}
	for _, k := range []string{"grpc", "websocket"} {
		if !seen[k] {
			rows = append(rows, row{What: "cold-start overhead, " + names[k], Measured: "not run", Result: missing})
		}
	}
	w := p.GRPCWarm
	if w == nil {
		return append(rows, row{What: "gRPC warm path, serve mode / static Envoy", Measured: "not run", Result: missing})
	}
	rounds := fmt.Sprintf("median of %d rounds", len(w.Serve.RoundP50Ms))
	p50r, ok50 := results.MedianRatio(w.Serve.RoundP50Ms, w.Static.RoundP50Ms)
	p99r, ok99 := results.MedianRatio(w.Serve.RoundP99Ms, w.Static.RoundP99Ms)
	noErr := w.Serve.Latency.Errors == 0 && w.Static.Latency.Errors == 0
	errNote := ""
	if !noErr {
		errNote = fmt.Sprintf("; %d + %d calls failed", w.Serve.Latency.Errors, w.Static.Latency.Errors)
	}
	return append(rows,
		row{What: fmt.Sprintf("gRPC warm path p50 latency, serve mode / static Envoy (%d unary calls/s)", w.RateRPS),
			Measured: fmt.Sprintf("%.3f (%s; all calls: %.3f vs %.3f ms%s)", p50r, rounds, w.Serve.Latency.P50Ms, w.Static.Latency.P50Ms, errNote),
			Target:   "≤ 1.01", Result: failOn(!noErr, atMost(ok50, p50r, 1.01)),
			Means: "what a typical warm gRPC call pays for running on thaw (1.00 = nothing; Envoy routes straight to the backend over h2c)"},
		row{What: fmt.Sprintf("gRPC warm path p99 latency, serve mode / static Envoy (%d unary calls/s)", w.RateRPS),
			Measured: fmt.Sprintf("%.3f (%s; all calls: %.3f vs %.3f ms%s)", p99r, rounds, w.Serve.Latency.P99Ms, w.Static.Latency.P99Ms, errNote),
			Target:   "≤ 1.01", Result: failOn(!noErr, atMost(ok99, p99r, 1.01)),
			Means: "the same for the slowest 1% of warm gRPC calls"},
		grpcThroughputRow(w),
		warmCPURow(fmt.Sprintf("gRPC warm path Envoy CPU per call, serve mode / static Envoy (%d in flight)", w.Concurrency), w.Serve, w.Static,
			"CPU thaw's Envoy spends per warm gRPC call against a minimal static Envoy (user + system time from /proc)"),
	)
}

// grpcThroughputRow judges the gRPC warm path's closed-loop calls/s, serve
// mode / static Envoy (median of per-round ratios, ≥ 0.95).
func grpcThroughputRow(w *results.GRPCWarm) row {
	tr, ok := results.MedianRatio(w.Serve.RoundThroughput, w.Static.RoundThroughput)
	return row{What: fmt.Sprintf("gRPC warm path throughput, serve mode / static Envoy (%d in flight)", w.Concurrency),
		Measured: fmt.Sprintf("%.3f (median of %d rounds; %.0f vs %.0f calls/s, %d + %d failed)", tr, len(w.Serve.RoundThroughput),
			w.Serve.ThroughputRPS, w.Static.ThroughputRPS, w.Serve.ThroughputErrors, w.Static.ThroughputErrors),
		Target: "≥ 0.95", Result: failOn(w.Serve.ThroughputErrors > 0, atLeast(ok, tr, 0.95)),
		Means: "unary calls/s one Envoy passes to a warm h2c backend with thaw's configuration vs a minimal one"}
}

// failOn returns fail when bad is true and the verdict was a measured one,
// else verdict.
func failOn(bad bool, verdict string) string {
	if bad && verdict != missing {
		return fail
	}
	return verdict
}
