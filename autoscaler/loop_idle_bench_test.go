package autoscaler_test

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/thaw-dev/thaw/autoscaler"
	"github.com/thaw-dev/thaw/control"
	"github.com/thaw-dev/thaw/revision"
	"github.com/thaw-dev/thaw/wake"
)

// idleArm is one arm of benchTickLoopIdle.
type idleArm struct {
	// keepTicking decides every revision every tick (the cost before
	// dormancy).
	keepTicking bool
	// warm gives every revision a daily warm window (08:00 UTC, closed
	// while the benchmark runs).
	warm bool
	// tickWarm decides revisions with warm windows every tick (the cost
	// before alarms); otherwise they sleep in the heap until 08:00.
	tickWarm bool
}

// benchTickLoopIdle measures one tick over n revisions of which one in
// 997 has load and replicas and the rest are at zero without stats (idle
// revisions on the hold path have no cluster, so no Envoy reports them),
// wired as benchTickLoop, in the configuration arm gives. Otherwise idle
// revisions go dormant and leave the loops. decisions/tick counts scale
// reads, one per decision; goroutines and timers (the fake clock's
// waiters) are counted after the last tick.
func benchTickLoopIdle(b *testing.B, n int, arm idleArm) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var tune []func(*revision.Spec)
	if arm.warm {
		p, errs := wake.Compile(&wake.Config{Schedule: []wake.WindowConfig{
			{Name: "office", Start: "0 8 * * *", Duration: "10h", MinScale: 1}}})
		if len(errs) > 0 {
			b.Fatal(errs)
		}
		tune = append(tune, func(s *revision.Spec) { s.Wake = p })
	}
	f := newBenchFleet(ctx, b, n, 997, tune...)
	start, clk, reg, plat := f.start, f.clk, f.reg, f.plat
	var loaded []revision.Key
	for i, k := range f.keys {
		if f.loaded[i] {
			loaded = append(loaded, k)
		}
	}
	col := autoscaler.NewCollector(autoscaler.CollectorOptions{Clock: clk})
	record := func(sec time.Time) {
		for _, k := range loaded {
			col.Record(autoscaler.Sample{Revision: k, Source: "envoy-0", Time: sec, Concurrency: 150, Requests: 150})
		}
	}
	for s := 59; s >= 0; s-- {
		record(start.Add(-time.Duration(s) * time.Second))
	}
	modes := control.New(control.Options{Registry: reg, Confirmer: confirmAll{}, Clock: clk})
	target := &readCounter{ScaleTarget: plat}
	opts := autoscaler.MultiscalerOptions{Clock: clk, Collector: col, Target: target, Confirmer: modes, Recorder: modes}
	if arm.keepTicking {
		autoscaler.KeepTicking(&opts)
	}
	if arm.tickWarm {
		autoscaler.TickWarmWindows(&opts)
	}
	ms := autoscaler.NewMultiscaler(opts)
	if _, err := reg.WaitFor(ctx, func(s *revision.Snapshot) bool { return s.Revisions.Len() == n }); err != nil {
		b.Fatal(err)
	}
	runDone := make(chan error, 1)
	go func() { runDone <- ms.Run(ctx, reg) }()
	shards := min(runtime.GOMAXPROCS(0), 8)
	// idle waits until every loop waits on its timer (and Run on its expiry
	// ticker): a fake clock does not move while a loop reads it, and a
	// loop back on its timer has decided everything due.
	idle := func() {
		for deadline := time.Now().Add(time.Minute); clk.Waiters() < shards+1 || target.reads.Load() < int64(n); {
			if time.Now().After(deadline) {
				b.Fatalf("%d clock waiters, want %d (%d reads)", clk.Waiters(), shards+1, target.reads.Load())
			}
			time.Sleep(50 * time.Microsecond)
		}
	}
	now := start
	tick := func() {
		idle()
		now = now.Add(autoscaler.DefaultTickInterval)
		clk.SetTime(now) // fires every loop's timer: each is due now
		idle()
	}
	for range 5 { // first decisions published, woken by their registry updates, settled
		record(now.Add(time.Second))
		record(now.Add(2 * time.Second))
		tick()
	}

	var cpu time.Duration
	var reads int64
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		record(now.Add(time.Second))
		record(now.Add(2 * time.Second))
		idle()
		b.StartTimer()
		cpu0, reads0 := cpuTime(b), target.reads.Load()
		tick()
		cpu += cpuTime(b) - cpu0
		reads += target.reads.Load() - reads0
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/tick")
	b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/tick")
	b.ReportMetric(float64(reads)/float64(b.N), "decisions/tick")
	b.ReportMetric(float64(runtime.NumGoroutine()), "goroutines")
	b.ReportMetric(float64(clk.Waiters()), "timers")
	cancel()
	if err := <-runDone; err != nil {
		b.Fatal(err)
	}
}

// readCounter passes calls to the platform, counting scale reads (one per
// decision) through its handles, as the Multiscaler reads them.
type readCounter struct {
	autoscaler.ScaleTarget
	reads atomic.Int64
}

func (c *readCounter) ScaleHandle(key revision.Key) (autoscaler.ScaleReader, bool) {
	r, ok := c.ScaleTarget.(autoscaler.ScaleHandles).ScaleHandle(key)
	if !ok {
		return nil, false
	}
	return countedReader{r: r, n: &c.reads}, true
}

func (c *readCounter) GetScale(ctx context.Context, key revision.Key) (int32, int32, error) {
	c.reads.Add(1)
	return c.ScaleTarget.GetScale(ctx, key)
}

type countedReader struct {
	r autoscaler.ScaleReader
	n *atomic.Int64
}

func (cr countedReader) Scale() (int32, int32, error) {
	cr.n.Add(1)
	return cr.r.Scale()
}
