package main

import (
	"strings"
	"testing"

	"github.com/thaw-dev/thaw/bench/results"
)

func TestProtocolRows(t *testing.T) {
	p := &results.Protocols{
		Cold: []results.ProtocolCold{
			{Kind: "grpc", Cold: results.Cold{N: 30, OverheadP99Ms: 15}},
			{Kind: "websocket", Cold: results.Cold{N: 30, OverheadP99Ms: 25}},
			{Kind: "http", Reference: true, Cold: results.Cold{N: 30, OverheadP99Ms: 50}},
		},
		GRPCWarm: &results.GRPCWarm{RateRPS: 1000, Concurrency: 16, Static: side(1.0, 2.0, 1000), Serve: side(1.005, 2.5, 900)},
	}
	p.GRPCWarm.Static.RoundEnvoyCPUUs, p.GRPCWarm.Static.CPURequests = []float64{50, 50, 50}, 3000
	p.GRPCWarm.Serve.RoundEnvoyCPUUs, p.GRPCWarm.Serve.CPURequests = []float64{51, 52, 60}, 3000
	rows := protocolRows(p)
	want := []string{pass, fail, pass, fail, fail, pass} // gRPC 15 ms, WebSocket 25 ms, p50 1.005, p99 1.25, 0.90 calls/s, CPU 1.04
	if len(rows) != len(want) {
		t.Fatalf("%d rows, want %d (the reference row is not judged): %+v", len(rows), len(want), rows)
	}
	for i, r := range rows {
		if r.Result != want[i] {
			t.Errorf("row %d (%s): %s, want %s (measured %s)", i, r.What, r.Result, want[i], r.Measured)
		}
	}

	// A failed call fails the warm-path rows; a failed cold start its row.
	p.GRPCWarm.Serve.Latency.Errors = 1
	p.Cold[0].Errors = 1
	p.GRPCWarm.Serve.RoundThroughput = p.GRPCWarm.Static.RoundThroughput
	if r := protocolRows(p)[4]; r.Result != pass {
		t.Errorf("equal calls/s: %s (%s), want %s", r.Result, r.Measured, pass)
	}
	p.GRPCWarm.Serve.ThroughputErrors = 2
	rows = protocolRows(p)
	if rows[4].Result != fail {
		t.Errorf("closed-loop call errors: %s, want %s", rows[4].Result, fail)
	}
	for _, i := range []int{0, 2} {
		if rows[i].Result != fail {
			t.Errorf("with errors, row %d (%s): %s, want %s", i, rows[i].What, rows[i].Result, fail)
		}
	}

	if r := protocolRows(nil); len(r) != 1 || r[0].Result != missing {
		t.Errorf("nil protocols: %+v", r)
	}
	// Cold starts alone: the warm path is reported missing.
	rows = protocolRows(&results.Protocols{Cold: p.Cold[:1]})
	if len(rows) != 3 || rows[1].Result != missing || rows[2].Result != missing {
		t.Errorf("partial run: %+v", rows)
	}
}

func TestRenderProtocols(t *testing.T) {
	d := &doc{Scenarios: &results.Scenarios{}}
	out, err := render(d)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), "## Protocols: gRPC and WebSocket\n\nNot run.\n\n## Burst from zero") {
		t.Errorf("not-run section missing or misplaced:\n%s", out)
	}
	p := &results.Protocols{
		Cold: []results.ProtocolCold{{Kind: "grpc", Request: "unary", Listening: "headers",
			Cold: results.Cold{N: 2, Errors: 1, Fails: []string{"boom"}, OverheadP99Ms: 9}}},
		GRPCWarm: &results.GRPCWarm{RateRPS: 10, Rounds: 3, RoundSeconds: 2, Workers: 8, Connections: 1,
			Static: side(1.0, 2.0, 0), Serve: side(1.1, 2.2, 0)},
	}
	d.Protocols = newProtocolsView(p)
	out, err = render(d)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(out)
	for _, want := range []string{
		"| 2 | 3.000 / 2.00 | 3.300 / 2.20 |",
		"| grpc | unary | headers | 2 | 1 | 0.0 ms | 9.0 ms |",
		"- grpc failed: boom",
		"3 rounds of 2.0 s",
	} {
		if !strings.Contains(doc, want) {
			t.Errorf("document lacks %q", want)
		}
	}
	if t.Failed() {
		t.Log(doc)
	}
}
