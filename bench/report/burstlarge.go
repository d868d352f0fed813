package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/thaw-dev/thaw/bench/results"
)

// burstLargeView is the repeated 10,000-request burst as the template
// shows it: one line per run.
type burstLargeView struct {
	Runs []burstLargeRun
}

type burstLargeRun struct {
	N                         int
	Requests, Errors, MaxHeld int
	ErrorKinds                string
	AllServed, FirstServed    string
	ThawKiB, EnvoyKiB         string
	ThawPeakMiB, EnvoyPeakMiB string
	BackendMax, CC            int
}

func newBurstLargeView(runs []results.Burst) *burstLargeView {
	if len(runs) == 0 {
		return nil
	}
	v := &burstLargeView{}
	for i := range runs {
		b := &runs[i]
		thaw, envoy := b.PerHeldKiB()
		kinds := strings.Join(b.ErrorSamples, "; ")
		if kinds == "" {
			kinds = "–"
		}
		v.Runs = append(v.Runs, burstLargeRun{N: i + 1, Requests: b.Requests, Errors: b.Errors, MaxHeld: b.MaxHeld,
			ErrorKinds: kinds, AllServed: fmtSeconds(b.AllServedMs), FirstServed: fmtSeconds(b.FirstServedMs),
			ThawKiB: fmt.Sprintf("%.1f", thaw), EnvoyKiB: fmt.Sprintf("%.1f", envoy),
			ThawPeakMiB: fmt.Sprintf("%.0f", b.Memory.ThawPeakMiB), EnvoyPeakMiB: fmt.Sprintf("%.0f", b.Memory.EnvoyPeakMiB),
			BackendMax: b.BackendMaxInFlight, CC: b.ContainerConcurrency})
	}
	return v
}

// burstLargeRows judges the repeated large bursts, at each container
// concurrency they ran at: no request lost in any run (issue: bursts up to
// the queue depth lose nothing, at any container concurrency), container
// concurrency kept, and the memory per held request for information.
func burstLargeRows(runs []results.Burst) []row {
	if len(runs) == 0 {
		return []row{{What: "large burst from zero", Measured: "not run", Result: missing}}
	}
	var ccs []int
	for _, b := range runs {
		if !slices.Contains(ccs, b.ContainerConcurrency) {
			ccs = append(ccs, b.ContainerConcurrency)
		}
	}
	var rows []row
	for _, cc := range ccs {
		var same []results.Burst
		for _, b := range runs {
			if b.ContainerConcurrency == cc {
				same = append(same, b)
			}
		}
		rows = append(rows, burstLargeRowsAt(same, cc)...)
	}
	return rows
}

// burstLargeRowsAt judges the runs at container concurrency cc.
func burstLargeRowsAt(runs []results.Burst, cc int) []row {
	n := runs[0].Requests
	errs, worstCC := 0, 0
	var served, thawKiB, envoyKiB []float64
	for i := range runs {
		b := &runs[i]
		errs += b.Errors
		worstCC = max(worstCC, b.BackendMaxInFlight)
		served = append(served, b.AllServedMs)
		t, e := b.PerHeldKiB()
		thawKiB, envoyKiB = append(thawKiB, t), append(envoyKiB, e)
	}
	slices.Sort(served)
	at := fmt.Sprintf("container-concurrency %d", cc)
	if cc == 0 {
		at = "container-concurrency 0 (none)"
	}
	rows := []row{
		{What: fmt.Sprintf("burst from zero: %d requests at once, %s, %d runs, errors of any kind", n, at, len(runs)),
			Measured: fmt.Sprintf("%d", errs), Target: "0", Result: atMost(true, float64(errs), 0),
			Means: "a burst up to the queue depth loses nothing, even when every process shares two saturated cores"},
		{What: fmt.Sprintf("burst from zero: %d requests, %s, time until all are served", n, at),
			Measured: fmt.Sprintf("median %s, worst %s", fmtSeconds(results.Quantile(served, 0.5)), fmtSeconds(served[len(served)-1])),
			Target:   "", Result: info,
			Means: "end to end on this machine: Envoy's event loop, not thaw, is the bottleneck at this size"},
		{What: fmt.Sprintf("burst from zero: %d requests, %s, memory growth per held request (median)", n, at),
			Measured: fmt.Sprintf("thaw %.1f KiB, Envoy %.1f KiB", results.Quantile(thawKiB, 0.5), results.Quantile(envoyKiB, 0.5)),
			Target:   "", Result: info,
			Means: "what holding a request costs: resident memory at the peak minus before, over the most requests held at once"},
	}
	if cc > 0 {
		rows = append(rows, row{What: fmt.Sprintf("burst from zero: %d requests, most requests at one backend at once (worst run)", n),
			Measured: fmt.Sprintf("%d", worstCC), Target: fmt.Sprintf("≤ %d (container-concurrency)", cc),
			Result: atMost(worstCC > 0, float64(worstCC), float64(cc)),
			Means:  "container-concurrency holds under overload too"})
	}
	return rows
}
