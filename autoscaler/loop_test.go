package autoscaler

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/zap"

	"github.com/thaw-dev/thaw/revision"
)

// TestLoopTicksEveryRevisionOnItsPeriod: 300 revisions on two loops, added
// at different moments, are each decided once at once and then once per
// tick, without a goroutine per revision.
func TestLoopTicksEveryRevisionOnItsPeriod(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		counts := &countingTarget{fakeTarget: newFakeTarget(), n: map[revision.Key]int{}}
		h := newHarness(t, func(o *MultiscalerOptions) { o.Target, o.Shards = counts, 2 })
		keys := make([]revision.Key, 300)
		for i := range keys {
			keys[i] = revision.Key{Namespace: "ns", Name: fmt.Sprintf("r%03d", i)}
			counts.set(keys[i], 1, 1)
		}
		before := runtime.NumGoroutine()
		start := time.Now()
		h.start()
		for i, k := range keys[:200] {
			h.reg.Upsert(k, testSpec(func(s *revision.Spec) { s.Hosts = []string{k.Name + ".example.com"} }))
			if i == 99 {
				time.Sleep(700 * time.Millisecond) // a second group, out of phase
			}
		}
		synctest.Wait()
		if n := runtime.NumGoroutine() - before; n > 4 {
			t.Errorf("%d goroutines for 200 revisions on 2 loops, want at most 4 (Run and its loops)", n)
		}
		time.Sleep(time.Until(start.Add(10*time.Second + time.Millisecond)))
		synctest.Wait()
		for i, k := range keys[:200] {
			want := 6
			if i >= 100 {
				want = 5 // the second group's sixth decision is due at 10.7 s
			}
			if got := counts.get(k); got != want {
				t.Errorf("%s decided %d times in 10 s, want %d", k, got, want)
				break
			}
		}
		if got := counts.get(keys[250]); got != 0 {
			t.Errorf("a revision not in the registry was decided %d times", got)
		}
		h.stop()
	})
}

// TestLoopPokeIsImmediateForOneRevision: a poke decides that revision at
// once and no other.
func TestLoopPokeIsImmediateForOneRevision(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		counts := &countingTarget{fakeTarget: newFakeTarget(), n: map[revision.Key]int{}}
		h := newHarness(t, func(o *MultiscalerOptions) { o.Target, o.Shards = counts, 1 })
		counts.set(keyA, 0, 0)
		counts.set(keyB, 0, 0)
		h.reg.Upsert(keyA, testSpec())
		h.reg.Upsert(keyB, testSpec(func(s *revision.Spec) { s.Hosts = []string{"b.example.com"} }))
		h.start()
		synctest.Wait()
		time.Sleep(500 * time.Millisecond)
		h.ms.Poke(keyA)
		h.ms.Poke(keyA) // one pending poke at most
		synctest.Wait()
		if a, b := counts.get(keyA), counts.get(keyB); a != 2 || b != 1 {
			t.Errorf("decisions after a poke of a: a %d, b %d; want 2 and 1", a, b)
		}
		if got := counts.scale(keyA); got != 1 {
			t.Errorf("a's scale after the poke = %d, want 1", got)
		}
		h.stop()
	})
}

// TestLoopKeepsScaleUntilAFullStableWindow: a restarted Multiscaler (a new
// Run, as after a thaw restart or a leader change) never scales a revision
// below its replicas before one stable window has passed, however little
// load its first seconds show; then it scales down as before.
func TestLoopKeepsScaleUntilAFullStableWindow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil)
		h.target.set(keyA, 8, 8)
		h.reg.Upsert(keyA, testSpec()) // stable window 6 s, target 10
		start := time.Now()
		h.start()
		h.load(keyA, 20, 5) // needs 2 pods, but only 5 s of data
		synctest.Wait()
		if got := h.target.scale(keyA); got != 8 {
			t.Errorf("scale within the first stable window = %d, want 8 (no scale-down yet)", got)
		}
		d, _ := h.ms.Status(keyA)
		if d.Reason != ReasonWarmingUp || d.Recommended >= 8 {
			t.Errorf("status = %+v, want the warm-up reason with a lower recommendation", d)
		}
		h.load(keyA, 20, 4)
		synctest.Wait()
		if got := h.target.scale(keyA); got >= 8 {
			t.Errorf("scale after %v = %d, want a scale-down once a stable window passed", time.Since(start), got)
		}
		h.stop()

		// A new Run (new leader): the floor applies again.
		h2 := newHarness(t, nil)
		h2.target.set(keyA, 4, 4)
		h2.reg.Upsert(keyA, testSpec())
		h2.start()
		h2.load(keyA, 0, 3)
		synctest.Wait()
		if got := h2.target.scale(keyA); got != 4 {
			t.Errorf("scale in a new Run's first stable window = %d, want 4", got)
		}
		h2.stop()
	})
}

// TestLoopWarmUpFloorSpareForIdleAndBounded: a revision first seen at zero
// has no floor (a woken revision may go back to zero), and the floor never
// exceeds the max scale.
func TestLoopWarmUpFloorSpareForIdleAndBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil)
		h.target.set(keyA, 6, 6)
		h.reg.Upsert(keyA, testSpec(func(s *revision.Spec) { s.MaxScale = 3 }))
		h.start()
		synctest.Wait()
		if got := h.target.scale(keyA); got != 3 {
			t.Errorf("scale above a lowered max scale = %d, want 3", got)
		}
		h.stop()
	})
}

// TestStepDoesNotAllocate: a steady-state decision (same scale, nothing
// published, nothing logged) allocates nothing.
func TestStepDoesNotAllocate(t *testing.T) {
	now := t0.Add(time.Hour)
	col := NewCollector(CollectorOptions{})
	target := newFakeTarget()
	ms := NewMultiscaler(MultiscalerOptions{Collector: col, Target: target, Confirmer: &fakeConfirmer{},
		Logger: zap.NewNop(), Shards: 1})
	ctx, cancel := context.WithCancel(t.Context())
	ms.startShards(ctx)
	defer ms.stopAll(cancel)
	var sts []*decisionState
	for i, conc := range []float64{0, 42, 420} {
		key := revision.Key{Namespace: "ns", Name: fmt.Sprintf("r%d", i)}
		fill(col, key, now, conc)
		target.set(key, 1+int32(conc/70), 1+int32(conc/70))
		st := newRevState(&revision.Revision{Key: key, Spec: revision.DefaultSpec()}, now.Add(-time.Hour), ms.shards[0])
		ms.step(t.Context(), st, false) // first decision publishes
		sts = append(sts, st)
	}
	for range 5 { // until the scale settled
		ms.applies.Wait()
		for _, st := range sts {
			ms.step(t.Context(), st, false)
		}
	}
	ms.applies.Wait()
	for _, st := range sts {
		if allocs := testing.AllocsPerRun(100, func() { ms.step(t.Context(), st, false) }); allocs != 0 {
			d, _ := st.latest()
			t.Errorf("%s: %v allocations per steady decision (%+v), want 0", st.key, allocs, d)
		}
	}
}

// countingTarget counts GetScale calls per revision.
type countingTarget struct {
	*fakeTarget
	n map[revision.Key]int // under fakeTarget.mu
}

func (c *countingTarget) GetScale(ctx context.Context, key revision.Key) (int32, int32, error) {
	c.mu.Lock()
	c.n[key]++
	c.mu.Unlock()
	return c.fakeTarget.GetScale(ctx, key)
}

func (c *countingTarget) get(key revision.Key) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[key]
}

// TestMetricsAggregatesWithoutRevisionSeries: by default the autoscaler
// exports sums and counts over revisions and no series per revision.
func TestMetricsAggregatesWithoutRevisionSeries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, func(o *MultiscalerOptions) { o.RevisionMetrics = false })
		h.target.set(keyA, 1, 1)
		h.target.set(keyB, 0, 0)
		h.reg.Upsert(keyA, testSpec())
		h.reg.Upsert(keyB, testSpec(func(s *revision.Spec) { s.Hosts = []string{"b.example.com"} }))
		h.start()
		h.load(keyA, 50, 3)
		synctest.Wait()
		for _, c := range []struct {
			name   string
			labels map[string]string
			want   float64
		}{
			{MetricRevisions, map[string]string{"state": "scaled"}, 1},
			{MetricRevisions, map[string]string{"state": "zero"}, 1},
			{MetricRevisions, map[string]string{"state": "undecided"}, 0},
			{MetricRevisionsPanicking, nil, 1},
			{MetricPods, map[string]string{"kind": "desired"}, 5},
			{MetricObservedConcurrency, map[string]string{"window": "stable"}, 50},
			{MetricAppliedScaleChanges, nil, 1},
		} {
			if got, ok := metricValue(t, h.promReg, c.name, c.labels); !ok || got != c.want {
				t.Errorf("%s%v = %v (present %v), want %v", c.name, c.labels, got, ok, c.want)
			}
		}
		if got, ok := metricValue(t, h.promReg, MetricDecisions, nil); !ok || got < 4 {
			t.Errorf("%s = %v, want at least 4 (two revisions, two ticks)", MetricDecisions, got)
		}
		for _, name := range []string{MetricDesiredPods, MetricScaleChanges, MetricScaleErrors} {
			if _, ok := metricValue(t, h.promReg, name, nil); ok {
				t.Errorf("per-revision family %s exported without RevisionMetrics", name)
			}
		}
		h.stop()
	})
}
