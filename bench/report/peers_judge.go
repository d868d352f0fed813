package main

import (
	"fmt"
	"math"

	"github.com/thaw-dev/thaw/bench/results"
)

// peersFactor is how many times lower than both peers' the activator
// module's added latency and added CPU per request must be (issue 31's
// target beside the KEDA interceptor and queue-proxy).
const peersFactor = 3

// lowerBy judges v (thaw's added figure) against the two peers' added
// figures: pass when factor·v is at most each (so a v at or below zero
// passes against peers that add something), missing when any is missing.
func lowerBy(factor, v float64, ok bool, a float64, okA bool, b float64, okB bool) string {
	if !ok || !okA || !okB {
		return missing
	}
	if factor*v <= a && factor*v <= b {
		return pass
	}
	return fail
}

// addedCPU returns a measured side's CPU seconds per 10k requests minus
// the static Envoy's (what its path adds to a plain Envoy's), and whether
// both were measured.
func addedCPU(p *results.Peers, side string) (float64, bool) {
	v, ok := cpuOf(p, side)
	st, okS := cpuOf(p, sideStatic)
	if !ok || !okS {
		return 0, false
	}
	return v - st, true
}

// cpuPerRequestCell renders a side's CPU per request and what it adds to
// the static Envoy's, in µs ("–" when not measured).
func cpuPerRequestCell(p *results.Peers, side string) string {
	v, ok := cpuOf(p, side)
	if s := peerSide(p, side); !ok || len(s.CPU) == 0 { // no proxy process (backend direct)
		return "–"
	}
	// seconds per 10k requests → µs per request: × 1e6 / 1e4.
	if d, ok := addedCPU(p, side); ok && side != sideStatic {
		return fmt.Sprintf("%.0f µs (%+.0f µs)", v*100, d*100)
	}
	return fmt.Sprintf("%.0f µs", v*100)
}

// peerRows are the summary rows judged against the peers (issue 31's
// target): the activator path on the module adds at least 3× less latency
// (p50 and p99) and 3× less CPU per request than either peer's hop, and
// the warm path stays at the static baseline. The ext_proc activator's
// figures from the same run stand beside the module's for comparison.
func peerRows(p *results.Peers) []row {
	if p == nil || p.Smoke {
		return []row{{What: "thaw beside the KEDA HTTP add-on and Knative queue-proxy", Measured: "not run", Result: missing}}
	}
	rounds := fmt.Sprintf("median of %d rounds, same run", p.Rounds)
	target := fmt.Sprintf("module ≤ 1/%d of both peers'", peersFactor)
	var rows []row
	for _, q := range []struct {
		name string
		pick func(*results.PeerSide) []float64
	}{{"p50", func(s *results.PeerSide) []float64 { return s.RoundP50Ms }},
		{"p99", func(s *results.PeerSide) []float64 { return s.RoundP99Ms }}} {
		md, okM := added(p, sideModule, q.pick)
		px, okP := added(p, sideProxy, q.pick)
		qp, okQ := added(p, sideQP, q.pick)
		kd, okK := added(p, sideKEDA, q.pick)
		rows = append(rows, row{
			What: fmt.Sprintf("activator path added %s latency vs the peers' hops (%d rps over all sides)", q.name, p.RateRPS),
			Measured: fmt.Sprintf("thaw module %s (ext_proc %s), Envoy + queue-proxy %s, Envoy + KEDA interceptor %s (%s)",
				diffCell(md, okM), diffCell(px, okP), diffCell(qp, okQ), diffCell(kd, okK), rounds),
			Target: target, Result: lowerBy(peersFactor, md, okM, qp, okQ, kd, okK),
			Means: "a request on thaw's activator path (the module inside Envoy) pays a fraction of one through Knative's queue-proxy or KEDA's interceptor"})
	}
	md, okM := addedCPU(p, sideModule)
	px, okP := addedCPU(p, sideProxy)
	qp, okQ := addedCPU(p, sideQP)
	kd, okK := addedCPU(p, sideKEDA)
	cell := func(v float64, ok bool) string {
		if !ok {
			return "–"
		}
		return fmt.Sprintf("%+.0f µs", v*100)
	}
	rows = append(rows, row{
		What: fmt.Sprintf("activator path added CPU per request vs the peers (Envoy + proxy processes over the static Envoy's, %d in flight)", p.Concurrency),
		Measured: fmt.Sprintf("thaw module %s (ext_proc %s), Envoy + queue-proxy %s, Envoy + KEDA interceptor %s",
			cell(md, okM), cell(px, okP), cell(qp, okQ), cell(kd, okK)),
		Target: target, Result: lowerBy(peersFactor, md, okM, qp, okQ, kd, okK),
		Means: "CPU the request path burns per request beyond a plain Envoy's while thaw's activator is in it, against the peers' paths"})
	st, sv := peerSide(p, sideStatic), peerSide(p, sideServe)
	var r50, r99 float64
	ok50, ok99 := false, false
	if st != nil && sv != nil && sv.Failed == "" {
		r50, ok50 = results.MedianRatio(sv.RoundP50Ms, st.RoundP50Ms)
		r99, ok99 = results.MedianRatio(sv.RoundP99Ms, st.RoundP99Ms)
	}
	rows = append(rows, row{
		What:     "warm path beside the peers: serve mode / static Envoy, p50 and p99",
		Measured: fmt.Sprintf("%s and %s (%s)", ratioCell(r50, ok50), ratioCell(r99, ok99), rounds),
		Target:   "≤ 1.01 both", Result: atMost(ok50 && ok99, math.Max(r50, r99), 1.01),
		Means: "a warm request on thaw costs what a plain Envoy costs, in the same run as the peers"})
	return rows
}
