package autoscaler

import (
	"context"
	"fmt"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/thaw-dev/thaw/revision"
)

// BenchmarkCollectorRecord measures ingestion: 1,000 revisions × 2 sources,
// each reporting once per second, time advancing as a stats sink would see
// it. Run with -cpu 1 for the per-core figure (samples/s).
func BenchmarkCollectorRecord(b *testing.B) {
	const revisions, sources = 1000, 2
	keys := make([]revision.Key, revisions)
	for i := range keys {
		keys[i] = revision.Key{Namespace: "bench", Name: fmt.Sprintf("rev-%05d", i)}
	}
	names := []string{"envoy-0", "envoy-1"}
	clk := testingclock.NewFakePassiveClock(t0.Add(24 * time.Hour))
	c := NewCollector(CollectorOptions{Clock: clk})
	b.ReportAllocs()
	b.ResetTimer()
	start, cpu0 := time.Now(), cpuTime(b)
	for i := 0; i < b.N; i++ {
		perSecond := revisions * sources
		sec := i / perSecond
		j := i % perSecond
		c.Record(Sample{
			Revision: keys[j/sources], Source: names[j%sources],
			Time:        t0.Add(time.Duration(sec) * time.Second),
			Concurrency: float64(j % 7), Requests: 3,
		})
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "samples/s")
	// Per CPU second: the per-core figure, robust to a loaded machine.
	b.ReportMetric(float64(b.N)/(cpuTime(b)-cpu0).Seconds(), "samples/cpu-s")
}

// BenchmarkCollectorRecordParallel is the same from GOMAXPROCS goroutines,
// each its own revisions (as several stats streams would).
func BenchmarkCollectorRecordParallel(b *testing.B) {
	clk := testingclock.NewFakePassiveClock(t0.Add(24 * time.Hour))
	c := NewCollector(CollectorOptions{Clock: clk})
	var workers atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		worker := workers.Add(1)
		keys := make([]revision.Key, 500)
		for i := range keys {
			keys[i] = revision.Key{Namespace: "bench", Name: fmt.Sprintf("w%d-rev-%04d", worker, i)}
		}
		i := 0
		for pb.Next() {
			c.Record(Sample{Revision: keys[i%500], Source: "envoy-0",
				Time: t0.Add(time.Duration(i/500) * time.Second), Concurrency: 1, Requests: 1})
			i++
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "samples/s")
}

// fill records 60 s of one-source data for key ending at end.
func fill(c *Collector, key revision.Key, end time.Time, conc float64) {
	for s := 59; s >= 0; s-- {
		c.Record(Sample{Revision: key, Source: "envoy-0", Time: end.Add(-time.Duration(s) * time.Second), Concurrency: conc, Requests: conc})
	}
}

// BenchmarkDecide measures one steady-state decision as the decision loop
// takes it (Multiscaler.step): the scale target read, window averages over
// a 60 s ring (one source), the KPA step, the Gate and the Decision, with no
// scale change to apply and nothing to publish. The scale target is the
// package's in-memory test target (a locked map read, as the platforms'
// cached GetScale); BenchmarkTickLoop runs the same path at 10k revisions
// through the local platform.
func BenchmarkDecide(b *testing.B) {
	for _, alg := range []Algorithm{AlgorithmLinear, AlgorithmWeightedExponential} {
		b.Run(string(alg), func(b *testing.B) {
			now := t0.Add(time.Hour)
			clk := testingclock.NewFakeClock(now)
			c := NewCollector(CollectorOptions{Clock: clk, Algorithm: alg})
			fill(c, keyA, now, 150)
			target := newFakeTarget()
			target.set(keyA, 3, 3)
			ms := NewMultiscaler(MultiscalerOptions{Clock: clk, Collector: c, Target: target,
				Confirmer: &fakeConfirmer{}, Logger: zap.NewNop(), Shards: 1})
			ctx, cancel := context.WithCancel(b.Context())
			ms.startShards(ctx)
			defer ms.stopAll(cancel)
			st := newRevState(&revision.Revision{Key: keyA, Spec: revision.DefaultSpec()}, now.Add(-time.Hour), ms.shards[0])
			for range 3 { // the first decision publishes; then steady
				ms.step(ctx, st, false)
				ms.applies.Wait()
			}
			if d, ok := st.latest(); !ok || !d.Valid || d.DesiredScale != 3 {
				b.Fatalf("steady decision = %+v, want valid at 3 pods", d)
			}
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := cpuTime(b)
			for i := 0; i < b.N; i++ {
				ms.step(ctx, st, false)
			}
			b.StopTimer()
			b.ReportMetric(float64((cpuTime(b)-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
			if sets, _ := target.calls(); len(sets) != 0 {
				b.Fatalf("a steady decision changed the scale: %+v", sets)
			}
		})
	}
}

// cpuTime returns the process's user+system CPU time.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
