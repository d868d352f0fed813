package main

import (
	_ "embed"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/thaw-dev/thaw/bench/results"
)

// peersTemplate defines the template "peers" (the section comparing thaw
// with the KEDA HTTP add-on and Knative); BENCHMARKS.md.tmpl includes it
// between peersBegin and peersEnd, which `make bench-peers` rewrites alone.
//
//go:embed peers.md.tmpl
var peersTemplate string

// The markers around the peers section in docs/BENCHMARKS.md.
const (
	peersBegin = "<!-- peers:begin (make bench-peers rewrites this section) -->"
	peersEnd   = "<!-- peers:end -->"
)

// Names of the sides the peers rows compare (bench/scenarios peers.go).
const (
	sideStatic = "static"
	sideServe  = "thaw serve"
	sideProxy  = "thaw proxy"
	sideQP     = "Envoy + queue-proxy"
	sideKEDA   = "Envoy + KEDA interceptor"
)

// peersView is what the "peers" template renders (Peers nil: not run).
type peersView struct {
	*results.Peers
	// Rows are the sides against the static baseline; Judged the rows of
	// the summary judged against the peers.
	Rows   []peerRow
	Judged []row
	// Load is the 1-minute load average over the latency rounds.
	Load string
}

// peerRow is one side against the static Envoy, each figure the median of
// the per-round comparisons.
type peerRow struct {
	Name, Description, Failed string
	P50, P90, P99             string // ratio to static
	AddedP50, AddedP99        string // ms
	Throughput                string // ratio to static
	CPU                       string // seconds per 10k requests, by process
	CPUTotal                  float64
}

func newPeersView(p *results.Peers) *peersView {
	v := &peersView{Peers: p}
	if p == nil {
		return v
	}
	st := peerSide(p, sideStatic)
	for _, s := range p.Sides {
		r := peerRow{Name: s.Name, Description: s.Description, Failed: s.Failed, CPU: cpuBreakdown(s), CPUTotal: s.TotalCPU()}
		if s.Failed == "" && st != nil {
			r.P50 = ratioCell(results.MedianRatio(s.RoundP50Ms, st.RoundP50Ms))
			r.P90 = ratioCell(results.MedianRatio(s.RoundP90Ms, st.RoundP90Ms))
			r.P99 = ratioCell(results.MedianRatio(s.RoundP99Ms, st.RoundP99Ms))
			r.AddedP50 = diffCell(results.MedianDiff(s.RoundP50Ms, st.RoundP50Ms))
			r.AddedP99 = diffCell(results.MedianDiff(s.RoundP99Ms, st.RoundP99Ms))
			r.Throughput = ratioCell(results.MedianRatio(s.RoundThroughput, st.RoundThroughput))
		}
		v.Rows = append(v.Rows, r)
	}
	if len(p.RoundLoad1) > 0 {
		ls := slices.Clone(p.RoundLoad1)
		slices.Sort(ls)
		v.Load = fmt.Sprintf("median %.1f (%.1f–%.1f)", ls[len(ls)/2], ls[0], ls[len(ls)-1])
	}
	v.Judged = peerRows(p)
	return v
}

// peerSide returns the side named name, or nil.
func peerSide(p *results.Peers, name string) *results.PeerSide {
	for i := range p.Sides {
		if p.Sides[i].Name == name {
			return &p.Sides[i]
		}
	}
	return nil
}

func ratioCell(v float64, ok bool) string {
	if !ok {
		return "–"
	}
	return fmt.Sprintf("%.2f", v)
}

func diffCell(v float64, ok bool) string {
	if !ok {
		return "–"
	}
	return fmt.Sprintf("%+.2f ms", v)
}

// cpuBreakdown renders "total (process a, process b)" in seconds per 10k
// requests.
func cpuBreakdown(s results.PeerSide) string {
	if len(s.CPU) == 0 {
		return "–"
	}
	parts := make([]string, len(s.CPU))
	for i, c := range s.CPU {
		parts[i] = fmt.Sprintf("%s %.2f", c.Process, c.SecondsPer10k)
	}
	return fmt.Sprintf("%.2f s (%s)", s.TotalCPU(), strings.Join(parts, ", "))
}

// added returns the median over rounds of side − static for the rounds
// figure pick selects, and whether both sides were measured.
func added(p *results.Peers, side string, pick func(*results.PeerSide) []float64) (float64, bool) {
	s, st := peerSide(p, side), peerSide(p, sideStatic)
	if s == nil || st == nil || s.Failed != "" || st.Failed != "" {
		return 0, false
	}
	return results.MedianDiff(pick(s), pick(st))
}

// cpuOf returns a measured side's CPU seconds per 10k requests.
func cpuOf(p *results.Peers, side string) (float64, bool) {
	s := peerSide(p, side)
	if s == nil || s.Failed != "" || s.CPURequests == 0 {
		return 0, false
	}
	return s.TotalCPU(), true
}

// belowBoth judges v (thaw's) against the two peers' figures: pass when it
// is below both, missing when any is missing.
func belowBoth(v float64, ok bool, a float64, okA bool, b float64, okB bool) string {
	if !ok || !okA || !okB {
		return missing
	}
	if v < a && v < b {
		return pass
	}
	return fail
}

// peerRows are the summary rows judged against the peers (the activator
// path issue's targets): thaw's activator path adds less latency and CPU
// per request than either peer's hop, and its warm path stays at the
// static baseline.
func peerRows(p *results.Peers) []row {
	if p == nil || p.Smoke {
		return []row{{What: "thaw beside the KEDA HTTP add-on and Knative queue-proxy", Measured: "not run", Result: missing}}
	}
	rounds := fmt.Sprintf("median of %d rounds, same run", p.Rounds)
	var rows []row
	for _, q := range []struct {
		name string
		pick func(*results.PeerSide) []float64
	}{{"p50", func(s *results.PeerSide) []float64 { return s.RoundP50Ms }},
		{"p99", func(s *results.PeerSide) []float64 { return s.RoundP99Ms }}} {
		px, okP := added(p, sideProxy, q.pick)
		qp, okQ := added(p, sideQP, q.pick)
		kd, okK := added(p, sideKEDA, q.pick)
		rows = append(rows, row{
			What: fmt.Sprintf("activator path added %s latency vs the peers' hops (%d rps over all sides)", q.name, p.RateRPS),
			Measured: fmt.Sprintf("thaw proxy %s, Envoy + queue-proxy %s, Envoy + KEDA interceptor %s (%s)",
				diffCell(px, okP), diffCell(qp, okQ), diffCell(kd, okK), rounds),
			Target: "below both peers", Result: belowBoth(px, okP, qp, okQ, kd, okK),
			Means: "a request held by thaw's activator pays less than one through Knative's queue-proxy or KEDA's interceptor"})
	}
	px, okP := cpuOf(p, sideProxy)
	qp, okQ := cpuOf(p, sideQP)
	kd, okK := cpuOf(p, sideKEDA)
	cell := func(v float64, ok bool) string {
		if !ok {
			return "–"
		}
		return fmt.Sprintf("%.2f s", v)
	}
	rows = append(rows, row{
		What: fmt.Sprintf("activator path CPU per 10k requests vs the peers (Envoy + proxy processes, %d in flight)", p.Concurrency),
		Measured: fmt.Sprintf("thaw proxy %s, Envoy + queue-proxy %s, Envoy + KEDA interceptor %s",
			cell(px, okP), cell(qp, okQ), cell(kd, okK)),
		Target: "below both peers", Result: belowBoth(px, okP, qp, okQ, kd, okK),
		Means: "CPU the whole request path burns per request while thaw's activator is in it, against the peers' paths"})
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
