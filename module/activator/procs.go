//go:build cgo

package main

import (
	"bytes"
	"os"
	"runtime"
	"strconv"
)

// Go's scheduler inside Envoy. Every call from an Envoy thread into the
// module takes one of Go's Ps and, on return, leaves it parked with that
// thread as if in a system call. With GOMAXPROCS at the CPU count (Go's
// default) Envoy's workers park every P, no P is ever idle, so sysmon
// retakes a parked P at each of its ticks and never backs off its 20 µs
// sleep: measured on the 2-core machine (perf, TestModulePathEnvoyCPU's
// Envoy) as 15-30 µs of CPU per request on Go's own threads, about as much
// as a fifth of Envoy's whole cost per request (docs/activator.md,
// *Measured*). With a P to spare beyond every thread that calls in, a
// parked P is left where it is and sysmon sleeps up to 10 ms.

// spareProcs is how many Ps beyond Envoy's workers the module asks for:
// one for Envoy's main thread (configuration hooks) and one left idle
// for the module's own goroutines (state stream, reports, timers).
const spareProcs = 2

// setProcs raises GOMAXPROCS to Envoy's worker count plus spareProcs,
// unless the operator set GOMAXPROCS; it never lowers it. It returns the
// value in force.
func setProcs() int {
	cur := runtime.GOMAXPROCS(0)
	if os.Getenv("GOMAXPROCS") != "" {
		return cur
	}
	cmdline, _ := os.ReadFile("/proc/self/cmdline")
	want := envoyWorkers(cmdline, runtime.NumCPU()) + spareProcs
	if want > cur {
		runtime.GOMAXPROCS(want)
		return want
	}
	return cur
}

// envoyWorkers returns Envoy's worker thread count from its command line
// (NUL-separated, as /proc/self/cmdline): the value of --concurrency,
// else def (Envoy's default is the machine's hardware threads).
func envoyWorkers(cmdline []byte, def int) int {
	args := bytes.Split(cmdline, []byte{0})
	for i, a := range args {
		var v []byte
		switch {
		case string(a) == "--concurrency" && i+1 < len(args):
			v = args[i+1]
		case bytes.HasPrefix(a, []byte("--concurrency=")):
			v = a[len("--concurrency="):]
		default:
			continue
		}
		if n, err := strconv.Atoi(string(v)); err == nil && n > 0 && n <= 4096 {
			return n
		}
	}
	return def
}
