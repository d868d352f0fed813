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
)

// TestDormantRacingInputs: inputs for 40 revisions on two loops from
// several goroutines (samples, stats sink batches, spec and backend
// changes) race the loops' ticks. Stopped right after, every revision is
// in exactly one place (its loop's heap, its loop's queue of woken
// revisions, or dormant); left alone until their samples leave the stable
// window, every revision is dormant and the heaps are empty.
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
	for i := range keys {
		keys[i] = revision.Key{Namespace: "ns", Name: fmt.Sprintf("r%02d", i)}
		h.target.set(keys[i], 0, 0)
		h.reg.Upsert(keys[i], testSpec(func(s *revision.Spec) { s.Hosts = []string{keys[i].Name + ".example.com"} }))
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
					h.reg.Upsert(k, testSpec(func(s *revision.Spec) {
						s.Hosts = []string{k.Name + ".example.com"}
						s.Target = float64(10 + rng.IntN(3))
					}))
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
	places := map[*decisionState]int{}
	for i, sh := range shards {
		for _, st := range sh.woken {
			places[st]++
		}
		for _, st := range sh.due {
			places[st]++
		}
		if n := len(sh.due); settle && n != 0 {
			t.Errorf("loop %d: %d revisions in its heap, want 0 (all dormant)", i, n)
		}
	}
	for k, st := range states {
		n := places[st]
		if st.dormant.Load() {
			n++
		}
		if n != 1 {
			t.Errorf("%s is in %d places (dormant %v), want 1", k, n, st.dormant.Load())
		}
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
