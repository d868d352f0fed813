package main

import (
	"strings"
	"testing"

	"github.com/thaw-dev/thaw/bench/results"
)

func TestModuleRows(t *testing.T) {
	if rows := moduleRows(&results.Paths{}); rows != nil {
		t.Fatalf("rows without module sides: %v", rows)
	}
	side := func(cpu float64) *results.Side {
		return &results.Side{RoundEnvoyCPUUs: []float64{cpu, cpu, cpu}, EnvoyCPUUsPerRequest: cpu, CPURequests: 1000,
			RoundP50Ms: []float64{1, 1, 1}, RoundP99Ms: []float64{2, 2, 2}, RoundThroughput: []float64{1000, 1000, 1000}, ThawCPUUsPerRequest: 0.5}
	}
	p := &results.Paths{Concurrency: 16, RateRPS: 1000, Serve: *side(100), Proxy: *side(400),
		ServeWithModule: side(100), Module: side(110), ModuleCC4: side(160)}
	rows := moduleRows(p)
	results := map[string]string{}
	for _, r := range rows {
		results[r.What] = r.Result
	}
	for what, want := range map[string]string{
		"container concurrency 0": pass, "container concurrency 4": fail, "throughput": pass, "thaw CPU": pass,
	} {
		found := false
		for w, got := range results {
			if strings.Contains(w, what) {
				found = true
				if got != want {
					t.Errorf("%s: %s, want %s", w, got, want)
				}
			}
		}
		if !found {
			t.Errorf("no row about %q in %v", what, results)
		}
	}
}
