package main

import (
	_ "embed"
	"fmt"
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
	sideModule = "thaw module"
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
	// CPUPerRequest is the side's CPU per request and what it adds to the
	// static Envoy's, in µs.
	CPUPerRequest string
	CPUTotal      float64
}

func newPeersView(p *results.Peers) *peersView {
	v := &peersView{Peers: p}
	if p == nil {
		return v
	}
	st := peerSide(p, sideStatic)
	for _, s := range p.Sides {
		r := peerRow{Name: s.Name, Description: s.Description, Failed: s.Failed, CPU: cpuBreakdown(s), CPUTotal: s.TotalCPU(),
			CPUPerRequest: cpuPerRequestCell(p, s.Name)}
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
