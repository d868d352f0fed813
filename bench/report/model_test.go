package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/thaw-dev/thaw/bench/results"
)

func TestVerdicts(t *testing.T) {
	tests := []struct {
		name string
		got  string
		want string
	}{
		{"at most, below", atMost(true, 1, 2), pass},
		{"at most, equal", atMost(true, 2, 2), pass},
		{"at most, above", atMost(true, 3, 2), fail},
		{"at most, missing", atMost(false, 0, 2), missing},
		{"at least, above", atLeast(true, 3, 2), pass},
		{"at least, below", atLeast(true, 1, 2), fail},
		{"at least, missing", atLeast(false, 9, 2), missing},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, tt.got, tt.want)
		}
	}
}

func side(p50, p99, tput float64) results.Side {
	return results.Side{Latency: results.Latency{Requests: 100, P50Ms: p50, P99Ms: p99}, ThroughputRPS: tput,
		// Three rounds; the middle one is an outlier the median ignores.
		RoundP50Ms: []float64{p50, p50 * 3, p50}, RoundP99Ms: []float64{p99, p99, p99 * 0.1},
		RoundThroughput: []float64{tput, tput, tput}}
}

func TestPathRows(t *testing.T) {
	rows := pathRows(&results.Paths{RateRPS: 1000, Concurrency: 16,
		Static: side(1.0, 2.0, 1000), Serve: side(1.005, 2.5, 990),
		ServeWithProxy: side(0.9, 2.5, 990), Proxy: side(1.1, 4.0, 600)})
	want := []string{pass, fail, pass, missing, pass, fail, fail, missing, missing} // p50 ok, p99 1.25, 0.99, no CPU, +0.2 ok, +1.5, 61%, no CPU figures
	if len(rows) != len(want) {
		t.Fatalf("%d rows, want %d", len(rows), len(want))
	}
	for i, r := range rows {
		if r.Result != want[i] {
			t.Errorf("row %d (%s): %s, want %s (measured %s)", i, r.What, r.Result, want[i], r.Measured)
		}
	}
	withCPU := &results.Paths{RateRPS: 1000, Concurrency: 16, Static: side(1, 2, 1000), Serve: side(1, 2, 1000),
		ServeWithProxy: side(1, 2, 1000), Proxy: side(1, 2, 1000)}
	withCPU.ServeWithProxy.EnvoyCPUUsPerRequest, withCPU.ServeWithProxy.CPURequests = 20, 1000
	withCPU.Proxy.ThawCPUUsPerRequest, withCPU.Proxy.EnvoyCPUUsPerRequest, withCPU.Proxy.CPURequests = 40, 45, 1000
	if r := pathRows(withCPU); r[7].Result != fail || r[8].Result != info {
		t.Errorf("CPU rows: %s (%s), %s (%s); want %s (40 µs > 15 µs), %s", r[7].Result, r[7].Measured, r[8].Result, r[8].Measured, fail, info)
	}
	if r := pathRows(nil); len(r) != 1 || r[0].Result != missing {
		t.Errorf("nil paths: %+v", r)
	}
	empty := pathRows(&results.Paths{})
	for _, r := range empty {
		if r.Result != missing {
			t.Errorf("no rounds: %s: %s, want %s", r.What, r.Result, missing)
		}
	}
}

// TestWarmCPURow: the warm path's Envoy CPU per request is judged by the
// median of per-round ratios (≤ 1.05), falling back to the pooled figures
// when a run has no rounds; the throughput row wants ≥ 0.95.
func TestWarmCPURow(t *testing.T) {
	cpu := func(pooled float64, rounds ...float64) results.Side {
		return results.Side{EnvoyCPUUsPerRequest: pooled, CPURequests: 1000, RoundEnvoyCPUUs: rounds}
	}
	for _, tc := range []struct {
		name       string
		side, base results.Side
		want       string
	}{
		{"within 5%", cpu(80, 82, 84, 200), cpu(80, 80, 80, 80), pass}, // the outlier round is outvoted
		{"10% more", cpu(88, 88, 88, 88), cpu(80, 80, 80, 80), fail},
		{"pooled only", cpu(83), cpu(80), pass},
		{"pooled only, over", cpu(90), cpu(80), fail},
		{"not measured", results.Side{}, cpu(80, 80), missing},
	} {
		r := warmCPURow("w", tc.side, tc.base, "")
		if r.Result != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, r.Result, tc.want)
		}
		if tc.want != missing && !strings.HasPrefix(r.Measured, "1.") {
			t.Errorf("%s: measured %q, want the ratio first", tc.name, r.Measured)
		}
	}
	slow := &results.Paths{Concurrency: 16, Static: side(1, 2, 1000), Serve: side(1, 2, 900)}
	if r := pathRows(slow); r[2].Result != fail {
		t.Errorf("throughput 0.90: %s (%s), want %s", r[2].Result, r[2].Measured, fail)
	}
}

func TestBurstRows(t *testing.T) {
	b := &results.Burst{Requests: 1000, Errors: 3, AllServedMs: 900, TimeToDesiredMs: 2500, DesiredMax: 20,
		TimeToReadyMs: -1, ContainerConcurrency: 50, BackendMaxInFlight: 40}
	got := map[string]string{}
	for _, r := range burstRows(b) {
		got[r.What] = r.Result
	}
	for what, want := range map[string]string{
		"burst from zero: 1000 requests at once, errors":               fail,
		"burst from zero: time until all are served":                   fail,
		"burst from zero: time to desired scale (autoscaler decision)": fail,
		"burst from zero: most requests at one backend at once":        pass,
		"burst from zero: time until that many backends are ready":     info,
	} {
		if got[what] != want {
			t.Errorf("%s: %q, want %q", what, got[what], want)
		}
	}
}

func TestMicroRowsMissing(t *testing.T) {
	for _, r := range microRows(nil, nil) {
		if r.Result != missing {
			t.Errorf("%s without benchmark output: %s, want %s", r.What, r.Result, missing)
		}
	}
}

func TestMicroRows(t *testing.T) {
	micro := []results.GoBench{
		{Pkg: "github.com/thaw-dev/thaw/autoscaler/statsink", Name: "IngestGRPC", Metrics: map[string]float64{"samples/cpu-s": 1.4e6}},
		{Pkg: "github.com/thaw-dev/thaw/autoscaler", Name: "TickLoop/10k", Metrics: map[string]float64{"cpu-ms/tick": 25, "ms/tick": 30}},
	}
	xds := []results.GoBench{{Pkg: "github.com/thaw-dev/thaw/e2e", Name: "XDSEnvoy10k", Metrics: map[string]float64{
		"flip-bytes": 272, "add-bytes": 1666, "remove-bytes": 265, "push-ack-p50-ms": 5, "flip-ack-p99-ms": 12, "flip-e2e-p99-ms": 3, "sync-ms": 1800, "rss-MiB": 150}}}
	var results []string
	for _, r := range microRows(micro, xds) {
		results = append(results, r.Result)
	}
	want := []string{pass, fail, missing, pass, pass, pass, fail, pass, pass}
	if strings.Join(results, ",") != strings.Join(want, ",") {
		t.Errorf("results %v, want %v", results, want)
	}
}

func TestHuman(t *testing.T) {
	for v, want := range map[float64]string{0: "0", 12: "12", 1.5: "1.5", 12500: "12.5k", 1.04e6: "1.04M", 2.5e9: "2.5G"} {
		if got := human(v); got != want {
			t.Errorf("human(%v) = %q, want %q", v, got, want)
		}
	}
}

func TestBuildAndRender(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("commands.tsv", "micro-x\tgo test -bench . ./autoscaler/\t0\t12\nscenarios\tgo run ./bench/scenarios\t1\t30\n")
	write("micro-x.txt", "pkg: github.com/thaw-dev/thaw/autoscaler\nBenchmarkTickLoop/10k-2 10 5 ns/op 12.5 cpu-ms/tick 20 ms/tick\n")
	write("load-start", "1.50 2.00 3.00 1/100 42\n")
	s := &results.Scenarios{Burst: &results.Burst{Requests: 1000, AllServedMs: 800, Picture: "docs/burst.png"},
		Cold: []results.Cold{{StartupDelayMs: 1000, N: 30, OverheadP99Ms: 12}}, Errors: []string{"paths: boom"}}
	if err := s.Write(filepath.Join(dir, "scenarios.json")); err != nil {
		t.Fatal(err)
	}
	doc := renderDoc(t, dir)
	for _, want := range []string{
		"| decider: one tick over 10k revisions (production loop, real registry and local platform) | 12.5 ms CPU (20.0 ms wall) | ≤ 20 ms (judged on CPU time) | pass |",
		"| cold-start overhead, backend startup delay 1.00 s | p99 12.0 ms (p50 0.0 ms, n=30) | ≤ 20 ms p99 (local) | pass |",
		"![burst from zero timeline](burst.png)",
		"**Commands that failed:** scenarios (exit 1)",
		"**Scenario error:** paths: boom",
		"1.50 / 2.00 / 3.00 at the start",
		"| micro-x | `go test -bench . ./autoscaler/` | 0 | 12 |",
		"warm path and activator path | not run",
	} {
		if !strings.Contains(doc, want) {
			t.Errorf("document lacks %q", want)
		}
	}
	if t.Failed() {
		t.Log(doc)
	}
}

// renderDoc builds and renders the document from the outputs in dir.
func renderDoc(t *testing.T, dir string) string {
	t.Helper()
	d, err := build(dir, "", "docs/BENCHMARKS.md")
	if err != nil {
		t.Fatal(err)
	}
	out, err := render(d)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}
