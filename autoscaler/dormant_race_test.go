package autoscaler

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/thaw-dev/thaw/revision"
	"github.com/thaw-dev/thaw/wake"
)

// TestDormantRacingInputs: inputs for 40 revisions (one in four with a
// warm window) on two loops from several goroutines (samples, stats sink
// batches, spec and backend changes) race the loops' ticks. Stopped right
// after, every revision is reachable and never twice in one place: awake
// in its loop's heap or queue of woken revisions (a warm one woken before
// its alarm may be in both), dormant out of them, or dormant in its heap
// until its alarm; each heapPos matches its index. Left alone until their
// samples leave the stable window, every revision is dormant and the
// heaps hold only the warm ones.
func TestDormantRacingInputs(t *testing.T) {
	for _, settle := range []bool{false, true} {
		t.Run(fmt.Sprintf("settle=%v", settle), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { raceInputs(t, settle) })
		})
	}
}

func raceInputs(t *testing.T, settle bool) {
	h := newHarness(t, func(o *MultiscalerOptions) { o.Shards = 2 })
	keys := make([]revision.Key, 40)
	// One in four has a warm window (closed during the test): dormant, it
	// waits in its loop's heap for its alarm.
	office := warmPolicy(t, wake.WindowConfig{Start: "0 8 * * *", Duration: "1h"})
	specOf := func(i int, fns ...func(*revision.Spec)) revision.Spec {
		return testSpec(append([]func(*revision.Spec){func(s *revision.Spec) {
			s.Hosts = []string{keys[i].Name + ".example.com"}
			if i%4 == 0 {
				s.Wake = office
			}
		}}, fns...)...)
	}
	for i := range keys {
		keys[i] = revision.Key{Namespace: "ns", Name: fmt.Sprintf("r%02d", i)}
		h.target.set(keys[i], 0, 0)
		h.reg.Upsert(keys[i], specOf(i))
	}
	h.start()
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 1))
			refs := make([]Ref, len(keys))
			for range 300 {
				i := rng.IntN(len(keys))
				k := keys[i]
				switch rng.IntN(4) {
				case 0:
					h.col.Record(Sample{Revision: k, Source: fmt.Sprint("e", g), Time: time.Now()})
				case 1:
					h.col.RecordBatch(&Batch{Source: fmt.Sprint("b", g), Time: time.Now(),
						Samples: []BatchSample{{Revision: k, Ref: &refs[i]}}})
				case 2:
					h.reg.Upsert(k, specOf(i, func(s *revision.Spec) { s.Target = float64(10 + rng.IntN(3)) }))
				default:
					h.reg.SetBackends(k, []revision.Backend{{Address: "127.0.0.1", Port: int32(8000 + rng.IntN(3))}})
				}
				time.Sleep(time.Duration(rng.IntN(400)) * time.Millisecond)
			}
		})
	}
	wg.Wait()
	if settle {
		tick(10) // past the stable window: nothing left in reach
		for _, k := range keys {
			if !h.ms.Dormant(k) {
				t.Errorf("%s not dormant once its inputs stopped", k)
			}
		}
	}
	h.ms.mu.RLock()
	shards, states := slices.Clone(h.ms.shards), maps.Clone(h.ms.states)
	h.ms.mu.RUnlock()
	h.stop() // the loops have ended: their heaps and queues can be read
	inHeap, queued := map[*decisionState]int{}, map[*decisionState]int{}
	warm := 0
	for i, sh := range shards {
		for _, st := range sh.woken {
			queued[st]++
		}
		for j, st := range sh.due {
			inHeap[st]++
			if st.heapPos != j+1 {
				t.Errorf("%s at heap index %d has heapPos %d", st.key, j, st.heapPos)
			}
			if settle && st.rev.Load().Spec.Wake == nil {
				t.Errorf("loop %d: %s in its heap, want only warm-window revisions (the rest dormant)", i, st.key)
			}
		}
	}
	for k, st := range states {
		h, q, d := inHeap[st], queued[st], st.dormant.Load()
		hasWindows := st.rev.Load().Spec.Wake != nil
		if hasWindows {
			warm++
		}
		switch {
		case h > 1 || q > 1:
			t.Errorf("%s is %d times in its heap and %d times queued, want at most once each", k, h, q)
		case d && !st.alarm.IsZero() && (h != 1 || q != 0):
			t.Errorf("%s dormant until its alarm: in heap %d, queued %d; want 1 and 0", k, h, q)
		case d && st.alarm.IsZero() && h+q != 0:
			t.Errorf("%s dormant: in heap %d, queued %d; want 0 and 0", k, h, q)
		case !d && h+q == 0:
			t.Errorf("%s is awake but neither in its heap nor queued", k)
		case !d && h+q == 2 && !hasWindows:
			t.Errorf("%s is in its heap and queued, without an alarm", k)
		}
		if settle && (!d || st.alarm.IsZero() != !hasWindows) {
			t.Errorf("%s settled: dormant %v, alarm %v, windows %v", k, d, st.alarm, hasWindows)
		}
	}
	if settle && warm != len(keys)/4 {
		t.Errorf("%d warm-window revisions, want %d", warm, len(keys)/4)
	}
}

// hookTarget runs hook inside GetScale: an input that lands while a tick
// decides the revision.
type hookTarget struct {
	*fakeTarget
	hook atomic.Pointer[func()]
}

func (h *hookTarget) GetScale(ctx context.Context, key revision.Key) (int32, int32, error) {
	if fn := h.hook.Swap(nil); fn != nil {
		(*fn)()
	}
	return h.fakeTarget.GetScale(ctx, key)
}

// TestDormantInputDuringTheTick: a spec change that reaches the
// Multiscaler while the tick that settles the revision runs (after that
// tick read the old spec) keeps the revision on its loop, so the next tick
// applies it.
func TestDormantInputDuringTheTick(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		target := &hookTarget{fakeTarget: newFakeTarget()}
		h := newHarness(t, func(o *MultiscalerOptions) { o.Target = target })
		target.set(keyA, 0, 0)
		h.reg.Upsert(keyA, testSpec())
		h.start()
		synctest.Wait()
		h.ms.mu.RLock()
		st := h.ms.states[keyA]
		h.ms.mu.RUnlock()
		hook := func() { // on the loop, in the first tick's decision
			before := st.inputs.Load()
			h.reg.Upsert(keyA, testSpec(func(s *revision.Spec) { s.MinScale = 2 }))
			for i := 0; i < 1_000_000 && st.inputs.Load() == before; i++ {
				runtime.Gosched() // Run's sync wakes the revision meanwhile
			}
		}
		target.hook.Store(&hook)
		tick(1)
		if h.ms.Dormant(keyA) {
			t.Error("dormant though its spec changed during the tick")
		}
		tick(1)
		if got := target.scale(keyA); got != 2 {
			t.Errorf("scale one tick later = %d, want 2 (the new min scale)", got)
		}
		h.stop()
	})
}
