package main

import (
	"strings"
	"testing"

	"github.com/thaw-dev/thaw/bench/results"
)

func TestBurstLargeRows(t *testing.T) {
	run := func(errs, most int) results.Burst {
		return results.Burst{Requests: 10000, Errors: errs, AllServedMs: 15000, MaxHeld: 5000,
			ContainerConcurrency: 50, BackendMaxInFlight: most,
			Memory: results.BurstMemory{ThawBeforeMiB: 50, ThawPeakMiB: 100, EnvoyBeforeMiB: 60, EnvoyPeakMiB: 560}}
	}
	for _, tc := range []struct {
		name           string
		runs           []results.Burst
		errors, cc     string
		memoryContains string
	}{
		{"clean", []results.Burst{run(0, 50), run(0, 48)}, pass, pass, "thaw 10.2 KiB, Envoy 102.4 KiB"},
		{"one run lost requests", []results.Burst{run(0, 50), run(12, 50)}, fail, pass, "thaw 10.2 KiB"},
		{"container concurrency exceeded", []results.Burst{run(0, 103)}, pass, fail, "Envoy 102.4 KiB"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := map[string]row{}
			for _, r := range burstLargeRows(tc.runs) {
				got[r.What[strings.LastIndex(r.What, ", ")+2:]] = r
			}
			if r := got["errors of any kind"]; r.Result != tc.errors {
				t.Errorf("errors row %q: %s, want %s", r.Measured, r.Result, tc.errors)
			}
			if r := got["most requests at one backend at once (worst run)"]; r.Result != tc.cc {
				t.Errorf("cc row %q: %s, want %s", r.Measured, r.Result, tc.cc)
			}
			if r := got["memory growth per held request (median)"]; !strings.Contains(r.Measured, tc.memoryContains) {
				t.Errorf("memory row %q, want it to contain %q", r.Measured, tc.memoryContains)
			}
		})
	}
	if rows := burstLargeRows(nil); len(rows) != 1 || rows[0].Result != missing {
		t.Errorf("not run: %+v", rows)
	}
}

// TestBurstLargeRowsByContainerConcurrency: runs at container concurrency
// 0 and 50 are judged apart, so a loss at 0 fails the row of 0 only.
func TestBurstLargeRowsByContainerConcurrency(t *testing.T) {
	run := func(cc, errs int) results.Burst {
		return results.Burst{Requests: 10000, Errors: errs, AllServedMs: 15000, MaxHeld: 5000,
			ContainerConcurrency: cc, BackendMaxInFlight: 40}
	}
	got := map[string]string{}
	for _, r := range burstLargeRows([]results.Burst{run(0, 3153), run(50, 0), run(0, 0)}) {
		if strings.HasSuffix(r.What, "errors of any kind") {
			got[r.What] = r.Result + " " + r.Measured
		}
	}
	want := map[string]string{
		"burst from zero: 10000 requests at once, container-concurrency 0 (none), 2 runs, errors of any kind": fail + " 3153",
		"burst from zero: 10000 requests at once, container-concurrency 50, 1 runs, errors of any kind":       pass + " 0",
	}
	if len(got) != len(want) {
		t.Fatalf("error rows %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %q, want %q", k, got[k], v)
		}
	}
}

func TestFailoverRows(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    *results.Failover
		want string
	}{
		{"nothing lost", &results.Failover{Requests: 3200, DirectAfterMs: 27, BackAfterMs: 5400}, pass},
		{"requests lost", &results.Failover{Requests: 3200, Errors: 4, DirectAfterMs: 27}, fail},
		{"no load ran", &results.Failover{}, missing},
		{"not run", nil, missing},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := failoverRows(tc.f)[0].Result; got != tc.want {
				t.Errorf("first row: %s, want %s", got, tc.want)
			}
		})
	}
}
