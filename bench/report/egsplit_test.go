package main

import (
	"testing"

	"github.com/thaw-dev/thaw/bench/results"
)

func TestEGSplitRows(t *testing.T) {
	side := func(cpu ...float64) results.Side {
		return results.Side{RoundEnvoyCPUUs: cpu, EnvoyCPUUsPerRequest: cpu[0], CPURequests: 1000}
	}
	for _, tc := range []struct {
		name             string
		s                *results.EGSplit
		cpu, vsRev, dist string
	}{
		{"not run", nil, missing, "", ""},
		{"as cheap, 10%", &results.EGSplit{Plain: side(100, 100), Revision: side(101, 101), Split: side(102, 103), CanaryShare: 9.8, SplitChecked: 1000}, pass, info, pass},
		{"dearer, skewed", &results.EGSplit{Plain: side(100, 100), Revision: side(101, 101), Split: side(120, 120), CanaryShare: 14, SplitChecked: 1000}, fail, info, fail},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rows := egSplitRows(tc.s)
			if rows[0].Result != tc.cpu {
				t.Errorf("CPU vs plain = %q, want %q (%s)", rows[0].Result, tc.cpu, rows[0].Measured)
			}
			if tc.s == nil {
				return
			}
			if rows[1].Result != tc.vsRev || rows[2].Result != tc.dist {
				t.Errorf("vs Revision, share = %q, %q; want %q, %q (%s)", rows[1].Result, rows[2].Result, tc.vsRev, tc.dist, rows[2].Measured)
			}
		})
	}
}
