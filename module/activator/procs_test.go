//go:build cgo

package main

import (
	"runtime"
	"testing"
)

func TestEnvoyWorkers(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cmdline string
		want    int
	}{
		{"separate value", "envoy\x00-c\x00b.yaml\x00--concurrency\x006\x00", 6},
		{"joined value", "envoy\x00--concurrency=3\x00-c\x00b.yaml\x00", 3},
		{"default", "envoy\x00-c\x00b.yaml\x00", 8},
		{"missing value", "envoy\x00--concurrency\x00", 8},
		{"not a number", "envoy\x00--concurrency\x00many\x00", 8},
		{"zero", "envoy\x00--concurrency=0\x00", 8},
		{"absurd", "envoy\x00--concurrency=100000\x00", 8},
		{"empty", "", 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := envoyWorkers([]byte(tc.cmdline), 8); got != tc.want {
				t.Errorf("envoyWorkers(%q) = %d, want %d", tc.cmdline, got, tc.want)
			}
		})
	}
}

// TestSetProcsLeavesASpareP: after setProcs, Go has more Ps than the
// threads that call in (this test binary's own command line has no
// --concurrency: NumCPU workers), so sysmon need not retake a parked one.
func TestSetProcsLeavesASpareP(t *testing.T) {
	t.Setenv("GOMAXPROCS", "")
	if got := setProcs(); got < runtime.NumCPU()+spareProcs || got != runtime.GOMAXPROCS(0) {
		t.Fatalf("setProcs() = %d (GOMAXPROCS %d), want at least %d", got, runtime.GOMAXPROCS(0), runtime.NumCPU()+spareProcs)
	}
	// An operator's GOMAXPROCS wins: setProcs changes nothing.
	t.Setenv("GOMAXPROCS", "1")
	before := runtime.GOMAXPROCS(0)
	if got := setProcs(); got != before || runtime.GOMAXPROCS(0) != before {
		t.Fatalf("with GOMAXPROCS set, setProcs() = %d and GOMAXPROCS %d, want %d unchanged", got, runtime.GOMAXPROCS(0), before)
	}
}
