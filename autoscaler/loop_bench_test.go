package autoscaler_test

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/thaw-dev/thaw/autoscaler"
	"github.com/thaw-dev/thaw/control"
	"github.com/thaw-dev/thaw/revision"
)

// BenchmarkTickLoop measures one tick over every revision through the
// production decision loops, wired as `thaw local` wires them: the real
// registry (5 ms holdoff), the local platform's GetScale (its lock), mode
// control as the ModeConfirmer and decision Recorder, and the collector
// holding a full stable window of stats per revision (one Envoy source,
// refreshed between ticks outside the measurement, as the stats sink would).
// One revision in 50 has load (and replicas); the rest are idle at zero.
// An op is one fake-clock step of the tick interval and ends when every
// revision was decided. Targets: ≤ 20 ms CPU per tick at 10k revisions,
// ≤ 200 ms at 100k (cpu-ms/tick: all threads, GC included).
//
// idle100k/keep-ticking and idle100k/dormant run the same idle fleet
// (benchTickLoopIdle) with every revision decided every tick and with
// idle revisions dormant: compare their cpu-ms/tick within one run.
// warm100k/tick and warm100k/sleep run it with a daily warm window on
// every revision (closed meanwhile), ticking at zero as before alarms and
// sleeping until the window opens.
func BenchmarkTickLoop(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		b.Run(fmt.Sprintf("%dk", n/1000), func(b *testing.B) { benchTickLoop(b, n) })
	}
	for _, a := range []struct {
		name string
		arm  idleArm
	}{
		{"idle100k/keep-ticking", idleArm{keepTicking: true}},
		{"idle100k/dormant", idleArm{}},
		{"warm100k/tick", idleArm{warm: true, tickWarm: true}},
		{"warm100k/sleep", idleArm{warm: true}},
	} {
		b.Run(a.name, func(b *testing.B) { benchTickLoopIdle(b, 100_000, a.arm) })
	}
}

func benchTickLoop(b *testing.B, n int) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := newBenchFleet(ctx, b, n, 50)
	start, clk, reg, plat, keys := f.start, f.clk, f.reg, f.plat, f.keys
	load := make([]float64, n)
	for i := range load {
		if f.loaded[i] {
			load[i] = 150
		}
	}
	col := autoscaler.NewCollector(autoscaler.CollectorOptions{Clock: clk})
	record := func(sec time.Time) {
		for i, k := range keys {
			col.Record(autoscaler.Sample{Revision: k, Source: "envoy-0", Time: sec, Concurrency: load[i], Requests: load[i]})
		}
	}
	for s := 59; s >= 0; s-- {
		record(start.Add(-time.Duration(s) * time.Second))
	}
	modes := control.New(control.Options{Registry: reg, Confirmer: confirmAll{}, Clock: clk})
	target := &countingTarget{ScaleTarget: plat, done: make(chan struct{}, 1)}
	ms := autoscaler.NewMultiscaler(autoscaler.MultiscalerOptions{Clock: clk, Collector: col, Target: target,
		Confirmer: modes, Recorder: modes})
	if _, err := reg.WaitFor(ctx, func(s *revision.Snapshot) bool { return s.Revisions.Len() == n }); err != nil {
		b.Fatal(err)
	}
	target.expect(int64(n))
	runDone := make(chan error, 1)
	first := time.Now()
	go func() { runDone <- ms.Run(ctx, reg) }()
	target.wait(b) // first decisions
	firstPass := time.Since(first)
	now := start
	shards := min(runtime.GOMAXPROCS(0), 8)
	tick := func() {
		// Every loop waits on its timer (and Run on its expiry ticker)
		// before time moves: a fake clock does not move while a loop
		// reads it.
		for deadline := time.Now().Add(time.Minute); clk.Waiters() < shards+1; {
			if time.Now().After(deadline) {
				b.Fatalf("%d clock waiters, want %d", clk.Waiters(), shards+1)
			}
			time.Sleep(50 * time.Microsecond)
		}
		now = now.Add(autoscaler.DefaultTickInterval)
		target.expect(int64(n))
		clk.SetTime(now)
		target.wait(b)
	}
	for range 3 { // first decisions published and applied; steady state after
		record(now.Add(time.Second))
		record(now.Add(2 * time.Second))
		tick()
	}

	var cpu time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		record(now.Add(time.Second))
		record(now.Add(2 * time.Second))
		b.StartTimer()
		cpu0 := cpuTime(b)
		tick()
		cpu += cpuTime(b) - cpu0
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/tick")
	b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/tick")
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N)/float64(n), "cpu-ns/revision")
	// The first pass also publishes every revision's first decision.
	b.ReportMetric(firstPass.Seconds(), "first-pass-s")
	cancel()
	if err := <-runDone; err != nil {
		b.Fatal(err)
	}
}

// countingTarget passes calls to the platform and signals when GetScale was
// called the expected number of times (one tick over every revision).
type countingTarget struct {
	autoscaler.ScaleTarget
	left atomic.Int64
	done chan struct{}
}

func (c *countingTarget) expect(n int64) { c.left.Store(n) }

// count signals done when the expected number of reads was reached.
func (c *countingTarget) count() {
	if c.left.Add(-1) == 0 {
		c.done <- struct{}{}
	}
}

// ScaleHandle passes the platform's handles on (the Multiscaler reads
// through them, as with the platform alone), counting their reads.
func (c *countingTarget) ScaleHandle(key revision.Key) (autoscaler.ScaleReader, bool) {
	r, ok := c.ScaleTarget.(autoscaler.ScaleHandles).ScaleHandle(key)
	if !ok {
		return nil, false
	}
	return countingReader{r: r, c: c}, true
}

type countingReader struct {
	r autoscaler.ScaleReader
	c *countingTarget
}

func (cr countingReader) Scale() (int32, int32, error) {
	cur, ready, err := cr.r.Scale()
	cr.c.count()
	return cur, ready, err
}

func (c *countingTarget) GetScale(ctx context.Context, key revision.Key) (int32, int32, error) {
	cur, ready, err := c.ScaleTarget.GetScale(ctx, key)
	c.count()
	return cur, ready, err
}

func (c *countingTarget) wait(b *testing.B) {
	select {
	case <-c.done:
	case <-time.After(10 * time.Minute):
		b.Fatalf("a tick did not decide every revision within 10 minutes (%d left)", c.left.Load())
	}
}

// confirmAll is an xDS server whose every Envoy acknowledged everything.
type confirmAll struct{}

func (confirmAll) ConfirmedEverywhere(revision.Key, uint64) bool { return true }

// cpuTime returns the process's user+system CPU time.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
