package main

import (
	"testing"

	"github.com/thaw-dev/thaw/bench/results"
)

func TestEGRows(t *testing.T) {
	side := func(p50 ...float64) results.Side {
		return results.Side{RoundP50Ms: p50, RoundP99Ms: p50, RoundThroughput: []float64{1000, 1000}}
	}
	own := []results.Cold{{StartupDelayMs: 0, N: 30, OverheadP50Ms: 10}}
	for _, tc := range []struct {
		name           string
		g              *results.EnvoyGateway
		own            []results.Cold
		warm, coldWant string
	}{
		{"not run", nil, own, missing, ""},
		{"equal and close", &results.EnvoyGateway{Plain: side(1, 1), Revision: side(1, 1), Cold: results.Cold{N: 20, OverheadP50Ms: 12}}, own, pass, pass},
		{"slower warm, far cold", &results.EnvoyGateway{Plain: side(1, 1), Revision: side(1.2, 1.2), Cold: results.Cold{N: 20, OverheadP50Ms: 20}}, own, fail, fail},
		{"cold failures", &results.EnvoyGateway{Plain: side(1, 1), Revision: side(1, 1), Cold: results.Cold{N: 20, Errors: 1, OverheadP50Ms: 10}}, own, pass, fail},
		{"no own fleet", &results.EnvoyGateway{Plain: side(1, 1), Revision: side(1, 1), Cold: results.Cold{N: 20, OverheadP50Ms: 10}}, nil, pass, missing},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rows := egRows(tc.g, tc.own)
			if rows[0].Result != tc.warm {
				t.Errorf("warm p50 row = %q, want %q (%s)", rows[0].Result, tc.warm, rows[0].Measured)
			}
			if tc.g == nil {
				return
			}
			if rows[2].Result != pass || rows[3].Result != missing {
				t.Errorf("throughput, CPU rows = %q, %q; want %q (equal), %q (no CPU figures)", rows[2].Result, rows[3].Result, pass, missing)
			}
			if got := rows[len(rows)-1].Result; got != tc.coldWant {
				t.Errorf("cold row = %q, want %q (%s)", got, tc.coldWant, rows[len(rows)-1].Measured)
			}
		})
	}
}
