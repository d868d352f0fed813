package state

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// Sentinel errors of Hold; the module answers both with 503 + Retry-After,
// as the ext_proc activator does.
var (
	// ErrQueueFull: the revision already holds QueueDepth requests.
	ErrQueueFull = errors.New("activator: queue full")
)

type limits struct {
	queueDepth  int
	holdTimeout time.Duration
}

// UpdateWait bounds how long a HoldForUpdate request waits for the next
// state update before it is granted like any held request. A removal's
// update follows Envoy's within milliseconds; an addition that Envoy's
// worker has not counted yet looks the same and brings no update, so
// without the bound its requests waited out the hold timeout (a
// 10,000-request burst from zero at container concurrency 50 lost 16 and
// 139 of them, 503 after 60 s).
var UpdateWait = time.Second

// Revision is one revision's backends, slots and held requests.
type Revision struct {
	// Key is "namespace/name".
	Key      string
	t        *Table
	backends atomic.Pointer[[]*Backend]
	limits   atomic.Pointer[limits]
	held     atomic.Int64 // requests waiting in queue
	inFlight atomic.Int64 // requests holding a slot
	wake     atomic.Pointer[wakeState]
	updates  atomic.Uint64               // state updates installed (set), for HoldForUpdate
	failure  atomic.Pointer[WakeFailure] // nil: none
	// confirmed counts the backends this Envoy ACKed (not Early).
	confirmed atomic.Int32
	// early counts the requests in flight through DstCluster (early.go).
	early atomic.Int64
	// earlyQuiet: requests went through DstCluster since the revision
	// last had no backend, and none was pinned on its cluster since
	// (ReportIdle, early.go).
	earlyQuiet atomic.Bool

	mu    sync.Mutex // queue and backend list changes
	queue []*Waiter  // FIFO from head; entries no longer waiting are skipped
	head  int
	// draining holds backends an update removed while requests were still
	// in flight on them, so a backend that comes back keeps its count and
	// its slots are never oversubscribed. Bounded by MaxBackends.
	draining map[string]*Backend
	// sweepTimer ends held requests at their deadline; sweepAt is when it
	// is armed for (zero: not armed). See sweep.go.
	sweepTimer *time.Timer
	sweepAt    time.Time
	report     reportLinks // reportlist.go
}

// noBackends is every new revision's backend list until its first update
// (never written through: set stores a new list), one allocation fewer per
// revision route at Envoy's start.
var noBackends = []*Backend{}

func newRevision(t *Table, key string) *Revision {
	r := &Revision{Key: key, t: t}
	r.backends.Store(&noBackends)
	return r
}

// Backends returns the current backends (read only).
func (r *Revision) Backends() []*Backend { return *r.backends.Load() }

// Held returns the requests held now.
func (r *Revision) Held() int64 { return r.held.Load() }

// InFlight returns the requests holding a slot now.
func (r *Revision) InFlight() int64 { return r.inFlight.Load() }

// Acquire takes a slot for a new request without waiting: nil when a
// request is already held (FIFO: a newcomer never overtakes it) or no
// backend has a free slot. Lock-free, no allocation. The caller frees the
// slot with Release when the request ends, however it ends.
func (r *Revision) Acquire() *Backend {
	if r.held.Load() > 0 {
		return nil
	}
	b := pick(*r.backends.Load())
	if b != nil && r.inFlight.Add(1) == 1 {
		r.markActive()
	}
	return b
}

// Release frees a slot taken by Acquire or granted to a Waiter, and grants
// it to the oldest held request.
func (r *Revision) Release(b *Backend) {
	b.release()
	r.inFlight.Add(-1)
	if r.held.Load() > 0 {
		r.dispatch()
	}
}

// Hold queues a request that Acquire could not place. It returns a Waiter
// that is already Granted when a slot freed meanwhile (notify is then not
// called), ErrQueueFull past the revision's queue depth, a
// *WakeFailedError while the revision's wake-up has failed and it has no
// backend, or a Waiting Waiter that notify reports on within the
// revision's hold timeout.
func (r *Revision) Hold(notify func(*Waiter)) (*Waiter, error) {
	return r.hold(NotifyFunc(notify), false)
}

// HoldNotify is Hold with a Notifier (no closure to allocate).
func (r *Revision) HoldNotify(n Notifier) (*Waiter, error) {
	return r.hold(n, false)
}

// HoldForUpdate is Hold for a request whose Envoy no longer lists any
// host of the revision while this state still does (an endpoint removal
// reached Envoy before the state update that removes the backend reached
// the module): the request is queued like any held request (same queue
// depth, hold timeout and FIFO order) and is granted a backend only from
// the next state update on, so it is never pinned to a backend Envoy
// already dropped, or once UpdateWait has passed without one (Envoy's
// count also lags behind additions, which bring no further update).
// Nothing is granted at once.
func (r *Revision) HoldForUpdate(notify func(*Waiter)) (*Waiter, error) {
	return r.hold(NotifyFunc(notify), true)
}

// HoldForUpdateNotify is HoldForUpdate with a Notifier.
func (r *Revision) HoldForUpdateNotify(n Notifier) (*Waiter, error) {
	return r.hold(n, true)
}

func (r *Revision) hold(notify Notifier, afterUpdate bool) (*Waiter, error) {
	r.mu.Lock()
	l := r.limits.Load()
	w := &Waiter{r: r, notify: notify}
	if afterUpdate {
		w.notBefore = r.updates.Load() + 1
	}
	if r.held.Load() == 0 && !afterUpdate {
		if b := pick(*r.backends.Load()); b != nil {
			if r.inFlight.Add(1) == 1 {
				r.markActive()
			}
			w.state, w.backend = Granted, b
			r.mu.Unlock()
			return w, nil
		}
	}
	if f := r.WakeFailure(); f != nil {
		r.mu.Unlock()
		return nil, &WakeFailedError{Failure: f}
	}
	if int(r.held.Load()) >= l.queueDepth {
		r.mu.Unlock()
		return nil, ErrQueueFull
	}
	if !r.t.reserveHeld() {
		r.mu.Unlock()
		return nil, ErrHeldLimit
	}
	first := r.held.Add(1) == 1
	if first {
		r.markActive()
	}
	r.queue = append(r.queue, w)
	w.deadline = time.Now().Add(l.holdTimeout)
	r.armLocked(w.deadline)
	if afterUpdate {
		time.AfterFunc(UpdateWait, w.stopWaitingForUpdate)
	}
	noBackends := len(*r.backends.Load()) == 0
	r.mu.Unlock()
	if first && noBackends {
		r.t.poke(r.Key)
	}
	return w, nil
}

// dispatch grants free slots to held requests in FIFO order and notifies
// them after the lock is released.
func (r *Revision) dispatch() {
	var granted []*Waiter
	r.mu.Lock()
	bs := *r.backends.Load()
	for r.held.Load() > 0 && r.head < len(r.queue) {
		w := r.queue[r.head]
		if w.state != Waiting {
			r.queue[r.head] = nil
			r.head++
			continue
		}
		if w.notBefore > r.updates.Load() {
			break // FIFO: nobody overtakes a request waiting for an update
		}
		b := pick(bs)
		if b == nil {
			break
		}
		if r.inFlight.Add(1) == 1 {
			r.markActive()
		}
		w.state, w.backend = Granted, b
		r.unhold()
		r.queue[r.head] = nil
		r.head++
		granted = append(granted, w)
	}
	r.compactLocked()
	r.mu.Unlock()
	for _, w := range granted {
		w.notify.Notify(w)
	}
}

// unhold counts one request less held, in the revision and the table.
func (r *Revision) unhold() {
	r.held.Add(-1)
	r.t.heldTotal.Add(-1)
}

// compactLocked drops the consumed head of the queue so it does not grow
// without bound.
func (r *Revision) compactLocked() {
	if r.held.Load() == 0 {
		clear(r.queue)
		r.queue, r.head = r.queue[:0], 0
		return
	}
	if r.head > 64 && r.head*2 > len(r.queue) {
		n := copy(r.queue, r.queue[r.head:])
		clear(r.queue[n:])
		r.queue, r.head = r.queue[:n], 0
	}
}

// set installs ru: backends kept by address (their in-flight counts go
// on), new ones added, missing ones dropped (requests on them finish and
// free their slot on the old object), the wake policy compiled when it
// changed, then held requests are granted. The error is a wake policy
// that did not compile (the rest of ru is installed).
func (r *Revision) set(ru *RevisionUpdate) error {
	werr := r.setWake(ru.Wake)
	r.failure.Store(ru.WakeFailure)
	r.mu.Lock()
	r.updates.Add(1)
	old := *r.backends.Load()
	byAddr := make(map[string]*Backend, len(old)+len(r.draining))
	for a, b := range r.draining {
		byAddr[a] = b
	}
	for _, b := range old {
		byAddr[b.Addr] = b
	}
	bs := make([]*Backend, 0, len(ru.Backends))
	kept := make(map[string]bool, len(ru.Backends))
	var confirmed int32
	for _, bu := range ru.Backends {
		if bu.Slots < 0 || kept[bu.Addr] {
			continue // no share here: dropped below like a missing one
		}
		b := byAddr[bu.Addr]
		if b == nil {
			b = &Backend{Addr: bu.Addr}
		}
		b.setSlots(bu.Slots) // a removed one comes back with its count
		b.fresh.Store(!bu.Unconfirmed && b.early.Load())
		b.early.Store(bu.Unconfirmed)
		if !bu.Unconfirmed {
			confirmed++
		}
		bs = append(bs, b)
		kept[bu.Addr] = true
	}
	r.confirmed.Store(confirmed)
	r.backends.Store(&bs)
	if len(bs) == 0 {
		r.earlyQuiet.Store(false) // at zero: no zeros to report (early.go)
	}
	// A dropped backend is marked removed first (no slot is taken on it
	// from then on, even by a request that loaded the old list), then
	// forgotten only if nothing is in flight on it: its address may come
	// back in a later update (a restarted thaw lists no backend until
	// Envoy's new xDS stream ACKs), and must come back with its count.
	r.draining = nil
	for a, b := range byAddr {
		if kept[a] {
			continue
		}
		if b.remove() > 0 && len(r.draining) < MaxBackends {
			if r.draining == nil {
				r.draining = map[string]*Backend{}
			}
			r.draining[a] = b
		}
	}
	r.limits.Store(&limits{queueDepth: ru.QueueDepth, holdTimeout: ru.HoldTimeout()})
	var failed []*Waiter
	if f := ru.WakeFailure; f != nil && len(bs) == 0 {
		failed = r.failAllLocked(f)
	}
	// Requests held while the update took the last backend away (held
	// for an update, or held behind a full backend) wake the revision now
	// rather than at the next report.
	poke := len(bs) == 0 && len(old) > 0 && r.held.Load() > 0
	r.mu.Unlock()
	if poke {
		r.t.poke(r.Key)
	}
	for _, w := range failed {
		w.notify.Notify(w)
	}
	if r.held.Load() > 0 {
		r.dispatch()
	}
	return werr
}
