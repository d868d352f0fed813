package activator

import (
	"container/list"
	"sync"
	"sync/atomic"
	"time"

	"github.com/thaw-dev/thaw/revision"
	"github.com/thaw-dev/thaw/wake"
)

// limits is the part of a revision's Spec the throttler enforces.
type limits struct {
	// containerConcurrency is the per-backend limit (0 = unlimited).
	containerConcurrency int
	holdTimeout          time.Duration
	queueDepth           int
	// wake is the revision's wake policy (read by holders; wake.go).
	wake *wake.Policy
}

func limitsOf(s *revision.Spec) limits {
	l := limits{containerConcurrency: s.ContainerConcurrency, holdTimeout: s.HoldTimeout, queueDepth: s.QueueDepth, wake: s.Wake}
	if l.holdTimeout <= 0 {
		l.holdTimeout = revision.DefaultHoldTimeout
	}
	if l.queueDepth <= 0 {
		l.queueDepth = revision.DefaultQueueDepth
	}
	return l
}

// tstate is one immutable throttler configuration: the backends that may
// take traffic and the limits. Run swaps it whole; the request path reads it
// with one atomic load.
type tstate struct {
	limits
	// failure is the revision's wake failure (nil: none); it fails
	// requests fast only while pods is empty (wakeError).
	failure *revision.WakeFailure
	pods    []*podTracker
	// retired are trackers of backends that left but may still have
	// requests in flight (WaitIdle watches them).
	retired []*podTracker
}

// throttler holds one revision's requests. Its capacity is the sum over
// pods of container concurrency (unlimited when 0); the queue of waiting
// requests is bounded by queue depth. Together they act as the breaker of
// Knative's activator, but capacity is counted on the pods themselves, so
// the breaker and the pod choice can never disagree.
//
// Fast path (nobody waiting): pick a pod and reserve a slot with one CAS, no
// lock. Slow path: under the throttler's own mutex (never a global one) the
// request joins a FIFO queue; whoever frees capacity (a release, a new
// state) hands slots to the queue's head. Each waiter wakes when its own
// channel is closed.
type throttler struct {
	key   revision.Key
	state atomic.Pointer[tstate]
	rr    atomic.Uint64 // round-robin start for ties

	inFlight atomic.Int64
	waiting  atomic.Int64 // mirrors queue.Len(); read without the lock
	lastPoke atomic.Int64 // unix nanos of the last poke

	mu      sync.Mutex
	queue   list.List // of *waiter
	removed bool

	// gone is closed when the revision leaves the registry.
	gone chan struct{}
	// changed is closed on every state change (WaitIdle); nil until
	// changedChan asks for one and after each close (most revisions are
	// never waited on: a channel each cost ~10 MB at 100,000).
	changedMu sync.Mutex
	changed   chan struct{}
	// failed is closed when a state that fails fast is installed (see
	// failChan); nil until a held request asks for one. Guarded by
	// changedMu.
	failed chan struct{}
}

type waiter struct {
	ready chan struct{} // closed when pod is set
	pod   *podTracker
	elem  *list.Element
}

func newThrottler(key revision.Key, l limits) *throttler {
	t := &throttler{key: key, gone: make(chan struct{})}
	t.state.Store(&tstate{limits: l})
	return t
}

// pick returns a pod with a reserved slot, or nil when no pod has capacity.
// It chooses the least-loaded pod; ties go to the first one in a rotation
// that advances on every pick (round robin).
func (t *throttler) pick() *podTracker {
	st := t.state.Load()
	n := len(st.pods)
	if n == 0 {
		return nil
	}
	limit := st.containerConcurrency
	// Each failed CAS means another request took a slot, so retries are
	// bounded by the number of slots that exist.
	for {
		start := int(t.rr.Add(1) % uint64(n))
		var best *podTracker
		var bestLoad int64
		for i := 0; i < n; i++ {
			p := st.pods[(start+i)%n]
			load := p.inFlight.Load()
			if limit > 0 && load >= int64(limit) {
				continue
			}
			if best == nil || load < bestLoad {
				best, bestLoad = p, load
			}
		}
		if best == nil {
			return nil
		}
		if limit == 0 {
			best.inFlight.Add(1)
			return best
		}
		if best.tryReserve(bestLoad, limit) {
			return best
		}
	}
}

// tryFast reserves a slot without locking when nobody is queued (queued
// requests go first).
func (t *throttler) tryFast() *podTracker {
	if t.waiting.Load() > 0 {
		return nil
	}
	return t.pick()
}

// enqueue adds a waiter unless the queue is full or the revision is gone.
// It then dispatches, so the new waiter (or one ahead of it) takes any
// capacity freed before it was visible in waiting.
func (t *throttler) enqueue() (*waiter, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.removed {
		return nil, ErrUnknownRevision
	}
	if t.queue.Len() >= t.state.Load().queueDepth {
		return nil, ErrQueueFull
	}
	w := &waiter{ready: make(chan struct{})}
	w.elem = t.queue.PushBack(w)
	t.waiting.Store(int64(t.queue.Len()))
	t.dispatchLocked()
	return w, nil
}

// dispatchLocked hands free slots to waiters in arrival order.
func (t *throttler) dispatchLocked() {
	for t.queue.Len() > 0 {
		p := t.pick()
		if p == nil {
			return
		}
		w := t.queue.Remove(t.queue.Front()).(*waiter)
		w.elem, w.pod = nil, p
		close(w.ready)
		t.waiting.Store(int64(t.queue.Len()))
	}
}

// dispatch wakes waiters after capacity was freed. The caller freed the
// capacity before reading waiting; enqueue publishes waiting before picking:
// one of the two always sees the other.
func (t *throttler) dispatch() {
	if t.waiting.Load() == 0 {
		return
	}
	t.mu.Lock()
	t.dispatchLocked()
	t.mu.Unlock()
}

// leave takes a waiter out of the queue. It returns the pod the waiter was
// given if a slot was handed over before it could leave.
func (t *throttler) leave(w *waiter) *podTracker {
	t.mu.Lock()
	defer t.mu.Unlock()
	if w.pod != nil {
		return w.pod
	}
	t.queue.Remove(w.elem)
	w.elem = nil
	t.waiting.Store(int64(t.queue.Len()))
	return nil
}

// setState installs a new configuration, wakes waiters that now fit and
// WaitIdle callers.
func (t *throttler) setState(st *tstate) {
	t.state.Store(st)
	t.mu.Lock()
	t.dispatchLocked()
	t.mu.Unlock()
	if st.failure != nil && len(st.pods) == 0 {
		t.signalFailed()
	}
	t.signalChanged()
}

// signalChanged closes the channel changedChan handed out, if any.
func (t *throttler) signalChanged() {
	t.changedMu.Lock()
	if t.changed != nil {
		close(t.changed)
		t.changed = nil
	}
	t.changedMu.Unlock()
}

// remove fails all held requests with ErrUnknownRevision from now on.
func (t *throttler) remove() {
	t.mu.Lock()
	t.removed = true
	t.mu.Unlock()
	close(t.gone)
	t.signalChanged()
}

// changedChan returns a channel closed at the next state change.
func (t *throttler) changedChan() <-chan struct{} {
	t.changedMu.Lock()
	defer t.changedMu.Unlock()
	if t.changed == nil {
		t.changed = make(chan struct{})
	}
	return t.changed
}

// release frees a slot on p and hands it to the queue if anyone waits.
func (t *throttler) release(p *podTracker) {
	p.release()
	t.inFlight.Add(-1)
	t.dispatch()
}

// podFor returns the tracker of addr if it can take new requests, else nil.
func (t *throttler) podFor(addr string) *podTracker {
	for _, p := range t.state.Load().pods {
		if p.addr == addr {
			return p
		}
	}
	return nil
}

// trackerFor returns the tracker of addr among current and retired pods.
func (t *throttler) trackerFor(addr string) *podTracker {
	st := t.state.Load()
	for _, ps := range [][]*podTracker{st.pods, st.retired} {
		for _, p := range ps {
			if p.addr == addr {
				return p
			}
		}
	}
	return nil
}

// isRemoved reports whether the revision left the registry.
func (t *throttler) isRemoved() bool {
	select {
	case <-t.gone:
		return true
	default:
		return false
	}
}
