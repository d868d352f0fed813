package main

import (
	"bytes"
	"runtime/pprof"
	"syscall"
	"testing"
	"time"
)

// spinForProfile burns CPU until this process has used d more of it (at
// most 20 s of wall time), so a CPU profile holds samples in this function.
//
//go:noinline
func spinForProfile(d time.Duration) int {
	start := processCPU()
	deadline := time.Now().Add(20 * time.Second)
	x := 0
	for processCPU()-start < d && time.Now().Before(deadline) {
		for i := range 100000 {
			x += i ^ x
		}
	}
	return x
}

func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func TestCPUProfileShare(t *testing.T) {
	var buf bytes.Buffer
	if err := pprof.StartCPUProfile(&buf); err != nil {
		t.Fatal(err)
	}
	_ = spinForProfile(500 * time.Millisecond)
	pprof.StopCPUProfile()

	got, err := cpuProfileShare(buf.Bytes(), "github.com/thaw-dev/thaw/bench/scenarios.spinForProfile")
	if err != nil {
		t.Fatal(err)
	}
	if got.Matched <= 0 || got.Matched > got.Total {
		t.Errorf("spin function: %s of %s, want some and at most all", got.Matched, got.Total)
	}
	none, err := cpuProfileShare(buf.Bytes(), "github.com/thaw-dev/thaw/autoscaler.")
	if err != nil {
		t.Fatal(err)
	}
	if none.Matched != 0 || none.Total != got.Total {
		t.Errorf("absent prefix: %s of %s, want 0 of %s", none.Matched, none.Total, got.Total)
	}
	if _, err := cpuProfileShare([]byte("not a profile"), "x"); err == nil {
		t.Error("garbage: no error")
	}
}
