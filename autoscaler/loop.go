package autoscaler

import (
	"container/heap"
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// loopShard is one decision loop: it owns a set of revisions, kept in a min-heap
// by the time of their next tick, and decides each one when it is due, or at
// once when it is added or poked. One timer per loop, whatever the number
// of revisions.
type loopShard struct {
	m    *Multiscaler
	kick chan struct{} // buffered 1: adds or pokes are queued

	mu     sync.Mutex
	added  []*decisionState
	poked  []*decisionState
	woken  []*decisionState // dormant revisions an input woke (dormant.go)
	batchA []*decisionState // spare slices, swapped with added/poked/woken under mu
	batchP []*decisionState
	batchW []*decisionState

	decisions atomic.Uint64

	// Owned by the loop goroutine.
	due dueHeap
}

func (m *Multiscaler) startShards(ctx context.Context) {
	m.mu.Lock()
	m.shards = make([]*loopShard, m.opts.Shards)
	for i := range m.shards {
		sh := &loopShard{m: m, kick: make(chan struct{}, 1)}
		m.shards[i] = sh
		m.wg.Add(1)
		go sh.run(ctx)
	}
	m.mu.Unlock()
}

// add queues a new revision: it is decided at once, then every tick.
func (sh *loopShard) add(st *decisionState) {
	sh.mu.Lock()
	sh.added = append(sh.added, st)
	sh.mu.Unlock()
	sh.wake()
}

// poke queues an immediate decision for st (at most one pending).
func (sh *loopShard) poke(st *decisionState) {
	if !st.pokeQueued.CompareAndSwap(false, true) {
		return
	}
	sh.mu.Lock()
	sh.poked = append(sh.poked, st)
	sh.mu.Unlock()
	sh.wake()
}

// rejoin queues a revision an input woke from dormancy: it is decided at
// once, then every tick.
func (sh *loopShard) rejoin(st *decisionState) {
	sh.mu.Lock()
	sh.woken = append(sh.woken, st)
	sh.mu.Unlock()
	sh.wake()
}

func (sh *loopShard) wake() {
	select {
	case sh.kick <- struct{}{}:
	default:
	}
}

func (sh *loopShard) run(ctx context.Context) {
	defer sh.m.wg.Done()
	clk := sh.m.opts.Clock
	period := sh.m.opts.TickInterval
	timer := clk.NewTimer(period)
	defer timer.Stop()
	for {
		sh.drain(ctx, period)
		now := clk.Now()
		for len(sh.due) > 0 && !sh.due[0].due.After(now) {
			st := sh.due[0]
			if st.halted() {
				heap.Pop(&sh.due)
				continue
			}
			if st.dormant.Load() {
				// Its alarm: the wake policy's windows change now.
				st.dormant.CompareAndSwap(true, false)
			}
			inputs0 := st.inputs.Load()
			if sh.m.step(ctx, st, false) && sh.sleep(st, inputs0, now) {
				if !st.alarm.IsZero() {
					st.due = st.alarm // dormant until its alarm or an input
					heap.Fix(&sh.due, 0)
				} else {
					heap.Pop(&sh.due) // dormant until an input wakes it
				}
				continue
			}
			st.due = nextDue(st.due, now, period)
			heap.Fix(&sh.due, 0)
			if ctx.Err() != nil {
				return
			}
		}
		if len(sh.due) > 0 {
			timer.Reset(sh.due[0].due.Sub(clk.Now()))
		} else {
			timer.Stop()
		}
		select {
		case <-ctx.Done():
			return
		case <-sh.kick:
			timer.Stop()
		case <-timer.C():
		}
	}
}

// drain decides newly added and poked revisions at once, and makes woken
// ones due now (a halted one leaves the heap: a revision deleted while it
// waited for its alarm).
func (sh *loopShard) drain(ctx context.Context, period time.Duration) {
	sh.mu.Lock()
	added, poked, woken := sh.added, sh.poked, sh.woken
	sh.added, sh.poked, sh.woken = sh.batchA[:0], sh.batchP[:0], sh.batchW[:0]
	sh.mu.Unlock()
	for i, st := range woken {
		woken[i] = nil
		if st.halted() {
			if st.heapPos > 0 {
				heap.Remove(&sh.due, st.heapPos-1)
			}
			continue
		}
		sh.setDue(st, sh.m.opts.Clock.Now())
	}
	for i, st := range added {
		added[i] = nil
		if st.halted() {
			continue
		}
		start := sh.m.opts.Clock.Now()
		sh.m.step(ctx, st, false)
		sh.setDue(st, start.Add(period))
	}
	for i, st := range poked {
		poked[i] = nil
		st.pokeQueued.Store(false)
		if st.halted() {
			continue
		}
		start := sh.m.opts.Clock.Now()
		sh.m.step(ctx, st, true)
		if st.dormant.CompareAndSwap(true, false) {
			// Poked while dormant: back to a tick after this decision.
			sh.setDue(st, start.Add(period))
		}
	}
	sh.batchA, sh.batchP, sh.batchW = added[:0], poked[:0], woken[:0]
}

// setDue makes st due at due: it is pushed on the heap, or moved there
// when it already is in it (a revision dormant until its alarm).
func (sh *loopShard) setDue(st *decisionState, due time.Time) {
	st.due = due
	if st.heapPos > 0 {
		heap.Fix(&sh.due, st.heapPos-1)
		return
	}
	heap.Push(&sh.due, st)
}

// nextDue returns the first tick after now on due's schedule (missed ticks
// are skipped, as a time.Ticker drops them).
func nextDue(due, now time.Time, period time.Duration) time.Time {
	due = due.Add(period)
	if late := now.Sub(due); late >= 0 {
		due = due.Add((late/period + 1) * period)
	}
	return due
}

// dueHeap orders a loop's revisions by their next tick, or their alarm
// (container/heap): element 0 is the revision due first. Each element's
// heapPos follows its index.
type dueHeap []*decisionState

var _ heap.Interface = (*dueHeap)(nil)

func (h dueHeap) Len() int           { return len(h) }
func (h dueHeap) Less(i, j int) bool { return h[i].due.Before(h[j].due) }
func (h dueHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].heapPos, h[j].heapPos = i+1, j+1
}

// Push appends x, a *decisionState (heap.Push's half).
func (h *dueHeap) Push(x any) {
	st := x.(*decisionState)
	*h = append(*h, st)
	st.heapPos = len(*h)
}

// Pop removes and returns the last element (heap.Pop's half).
func (h *dueHeap) Pop() any {
	old := *h
	n := len(old) - 1
	st := old[n]
	old[n] = nil
	st.heapPos = 0
	*h = old[:n]
	return st
}
