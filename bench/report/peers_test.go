package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/thaw-dev/thaw/bench/results"
)

// peersFixture is a run where thaw's module adds 0.1 ms at p50 and 0.15
// ms at p99 (ext_proc 0.2 and 0.5), the peers 0.5/1.0 and 0.6/1.5 ms; the
// module adds 1.5 s of CPU per 10k requests to the static Envoy's 3 s, the
// peers 4 and 5 s.
func peersFixture() *results.Peers {
	side := func(name string, p50, p99, tput float64, cpu ...results.ProcessCPU) results.PeerSide {
		return results.PeerSide{Name: name, RoundP50Ms: []float64{p50, p50}, RoundP90Ms: []float64{p50, p50},
			RoundP99Ms: []float64{p99, p99}, RoundThroughput: []float64{tput, tput}, CPU: cpu, CPURequests: 1000}
	}
	c := func(p string, s float64) results.ProcessCPU { return results.ProcessCPU{Process: p, SecondsPer10k: s} }
	return &results.Peers{Rounds: 2, RateRPS: 1000, Concurrency: 16, RoundLoad1: []float64{1, 3, 2},
		Cold:  []results.PeerCold{{Name: "Envoy + KEDA interceptor", Includes: "the informer", N: 3, Errors: 1, P50Ms: 12.34, Fails: []string{"status 502"}}},
		Peers: []results.Peer{{Name: "KEDA HTTP add-on interceptor", Version: "v0.15.0", Command: "interceptor", Config: "A=1\nB=2"}},
		Sides: []results.PeerSide{
			side(sideStatic, 1.0, 2.0, 1000, c("Envoy", 3)),
			side(sideServe, 1.0, 2.0, 1000, c("Envoy", 3), c("thaw", 0.1)),
			side(sideProxy, 1.2, 2.5, 500, c("Envoy", 6), c("thaw", 2)),
			side(sideModule, 1.1, 2.15, 900, c("Envoy", 4.4), c("thaw", 0.1)),
			side(sideQP, 1.5, 3.0, 400, c("Envoy", 3), c("queue-proxy", 4)),
			side(sideKEDA, 1.6, 3.5, 400, c("Envoy", 3), c("interceptor", 5)),
			{Name: "KEDA interceptor alone", Failed: "interceptor did not start: boom"},
		}}
}

func TestPeerRows(t *testing.T) {
	rows := peerRows(peersFixture())
	if len(rows) != 4 {
		t.Fatalf("rows: %+v", rows)
	}
	// p50 (3×0.1 ≤ 0.5, 0.6), p99 (3×0.15 ≤ 1.0, 1.5), CPU (3×1.5 > 4), warm path.
	want := []string{pass, pass, fail, pass}
	for i, r := range rows {
		if r.Result != want[i] {
			t.Errorf("row %d %q: %s, want %s (%s)", i, r.What, r.Result, want[i], r.Measured)
		}
	}
	if m := rows[2].Measured; m != "thaw module +150 µs (ext_proc +500 µs), Envoy + queue-proxy +400 µs, Envoy + KEDA interceptor +500 µs" {
		t.Errorf("CPU row measured %q", m)
	}
	c := func(p string, s float64) results.ProcessCPU { return results.ProcessCPU{Process: p, SecondsPer10k: s} }
	p := peersFixture()
	p.Sides[3].CPU = []results.ProcessCPU{c("Envoy", 3.9), c("thaw", 0.1)} // adds 1 s: 3 s ≤ 4 and 5
	if r := peerRows(p); r[2].Result != pass {
		t.Errorf("module CPU 3x below both peers: %s (%s)", r[2].Result, r[2].Measured)
	}
	p.Sides[3].RoundP50Ms = []float64{1.2, 1.2} // adds 0.2 ms: 0.6 > 0.5
	if r := peerRows(p); r[0].Result != fail {
		t.Errorf("module p50 not 3x below queue-proxy's: %s (%s)", r[0].Result, r[0].Measured)
	}
	p = peersFixture()
	p.Sides[3].Failed = "thaw local --activator=module did not start"
	if r := peerRows(p); r[0].Result != missing || r[2].Result != missing {
		t.Errorf("a failed module side must leave the comparison not measured: %+v", r)
	}
	p = peersFixture()
	p.Sides[4].Failed = "queue-proxy did not start"
	if r := peerRows(p); r[0].Result != missing || r[2].Result != missing {
		t.Errorf("a failed peer must leave the comparison not measured: %+v", r)
	}
	if r := peerRows(nil); len(r) != 1 || r[0].Result != missing {
		t.Errorf("nil peers: %+v", r)
	}
}

func TestRewritePeers(t *testing.T) {
	dir := t.TempDir()
	if err := peersFixture().Write(filepath.Join(dir, "peers.json")); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "BENCHMARKS.md")
	// No section yet: appended.
	if err := os.WriteFile(out, []byte("# Benchmarks\n\nkept\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := rewritePeers(dir, out); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(out)
	first := string(b)
	for _, s := range []string{"# Benchmarks\n\nkept\n", peersBegin, peersEnd, "| thaw proxy |", "| thaw module |", "| 450 µs (+150 µs) |",
		"**failed**: interceptor did not start: boom", "  A=1\n  B=2", "median 2.0 (1.0–3.0)",
		"| Envoy + KEDA interceptor | 12.3 ms | 0.0 ms | 0.0 ms | 1/3; status 502 | the informer |"} {
		if !strings.Contains(first, s) {
			t.Errorf("missing %q in:\n%s", s, first)
		}
	}
	// Rewritten in place: the text around the section is kept, once.
	if err := os.WriteFile(out, []byte("before\n"+first+"after\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := rewritePeers(dir, out); err != nil {
		t.Fatal(err)
	}
	b, _ = os.ReadFile(out)
	if got := string(b); got != "before\n"+first+"after\n" || strings.Count(got, peersBegin) != 1 {
		t.Errorf("rewrite changed the document:\n%s", got)
	}
}
