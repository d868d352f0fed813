//go:build cgo

package main

/*
#include <stdint.h>
#include <time.h>

// thaw_next_yield_ns: when this Envoy thread next yields (CLOCK_MONOTONIC
// ns); 0 until its first check. One per thread, so no thread waits on
// another's schedule.
static __thread uint64_t thaw_next_yield_ns;

// thaw_yield_due reports whether this thread's period has passed since its
// last yield, and starts the next period when it has. The first check of
// a thread only starts its first period.
static int thaw_yield_due(uint64_t period_ns) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  uint64_t now = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
  if (now < thaw_next_yield_ns) return 0;
  int first = thaw_next_yield_ns == 0;
  thaw_next_yield_ns = now + period_ns;
  return !first;
}
*/
import "C"

import (
	"runtime"
	"time"
)

// Go's sysmon and Envoy's workers. A call from an Envoy worker into the
// module runs on a Go P that the worker keeps, parked as if in a system
// call, between calls; Go counts a P's scheduling rounds (its schedtick)
// only when a goroutine is scheduled onto it, which a callback never is.
// After 10 ms without a new round sysmon takes the P as stuck (Go's
// forcePreemptNS, runtime/proc.go retake): it retakes it on every pass,
// preempts the worker's callback when it finds it in Go (a handoff through
// another Go thread that blocks the worker), and, having retaken
// something, never backs off its 20 µs sleep. Measured with perf at cc 4,
// 16 in flight: sysmon's loop was 6.7% of the module Envoy's CPU, and it
// runs on the CPUs Envoy's workers need.
//
// yieldPeriod: each worker yields its P once per period at the end of a
// stream (runtime.Gosched: a new scheduling round on the same P, one
// handoff through a Go thread, ~tens of µs, no request state held), so no
// worker's P ever looks stuck and sysmon sleeps up to 10 ms. It must stay
// under forcePreemptNS; the forced preemption it replaces cost the same
// handoff every 10 ms anyway. With it sysmon fell to 0.4-1.6% of the
// module Envoy's CPU (docs/activator.md, *Where the module path's extra
// Envoy CPU goes*).
const yieldPeriod = 8 * time.Millisecond

// yieldDue reports whether this thread is due to yield (see yieldPeriod).
func yieldDue(period time.Duration) bool {
	return C.thaw_yield_due(C.uint64_t(period.Nanoseconds())) != 0
}

// maybeYield yields the calling thread's P once per yieldPeriod. Call it
// only at the end of a hook, holding nothing.
func maybeYield() {
	if yieldDue(yieldPeriod) {
		runtime.Gosched()
	}
}
