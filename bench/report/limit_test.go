package main

import (
	"strings"
	"testing"

	"github.com/thaw-dev/thaw/bench/results"
)

// TestLimitRows: the cc 4 side's throughput is judged against serve mode,
// and with Envoy's own limit of 4 measured, the limit's cost and the
// module's share over it are reported with their ratios.
func TestLimitRows(t *testing.T) {
	side := func(cpu, rps float64) *results.Side {
		return &results.Side{RoundEnvoyCPUUs: []float64{cpu, cpu, cpu}, EnvoyCPUUsPerRequest: cpu, CPURequests: 1000,
			RoundThroughput: []float64{rps, rps, rps}, ThroughputRPS: rps}
	}
	p := &results.Paths{Concurrency: 16, Static: *side(80, 6000), Serve: *side(100, 6000), ModuleCC4: side(160, 4200)}
	if rows := limitRows(&results.Paths{}); rows != nil {
		t.Fatalf("rows without the cc 4 side: %v", rows)
	}
	rows := limitRows(p)
	if len(rows) != 1 || rows[0].Result != fail || !strings.Contains(rows[0].Measured, "0.700") {
		t.Fatalf("cc 4 throughput without the limit side: %+v, want one failed row at 0.700", rows)
	}
	p.StaticLimit4 = side(100, 5000)
	rows = limitRows(p)
	if len(rows) != 3 {
		t.Fatalf("%d rows, want 3: %+v", len(rows), rows)
	}
	for i, want := range []string{"Envoy CPU 1.250, throughput 0.833", "Envoy CPU 1.600, throughput 0.840"} {
		if r := rows[i+1]; r.Result != info || !strings.Contains(r.Measured, want) {
			t.Errorf("row %q: %s %q, want %s with %q", r.What, r.Result, r.Measured, info, want)
		}
	}
}
