package activator

import (
	"sync"
	"sync/atomic"
)

// podTracker counts the requests in flight on one backend. Trackers are
// shared between successive throttler states while their address stays, so
// replacing the backend set never loses the count of requests already sent
// to a backend.
type podTracker struct {
	addr     string
	inFlight atomic.Int64

	// idle wakes WaitIdle callers when inFlight drops to 0. idleWaiters is
	// raised before a waiter reads inFlight and checked after every
	// decrement, so a drop to 0 is never missed.
	idleWaiters atomic.Int32
	idleMu      sync.Mutex
	idle        chan struct{}
}

func newPodTracker(addr string) *podTracker {
	return &podTracker{addr: addr, idle: make(chan struct{})}
}

// tryReserve takes one slot when fewer than limit requests are in flight
// (limit 0 = unlimited). seen is the in-flight count the caller based its
// choice on; the reservation fails when another request changed it first.
func (p *podTracker) tryReserve(seen int64, limit int) bool {
	if limit > 0 && seen >= int64(limit) {
		return false
	}
	return p.inFlight.CompareAndSwap(seen, seen+1)
}

// release gives one slot back and wakes idle waiters on the drop to 0.
func (p *podTracker) release() {
	if p.inFlight.Add(-1) == 0 && p.idleWaiters.Load() > 0 {
		p.idleMu.Lock()
		close(p.idle)
		p.idle = make(chan struct{})
		p.idleMu.Unlock()
	}
}

// idleChan registers an idle waiter and returns the channel closed at the
// next drop to 0; call the returned func when done waiting.
func (p *podTracker) idleChan() (<-chan struct{}, func()) {
	p.idleWaiters.Add(1)
	p.idleMu.Lock()
	ch := p.idle
	p.idleMu.Unlock()
	return ch, func() { p.idleWaiters.Add(-1) }
}
