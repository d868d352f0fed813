package state

import "time"

// Outcome is where a held request stands.
type Outcome int32

// Outcomes of a Waiter.
const (
	Waiting Outcome = iota
	Granted
	TimedOut
	Canceled
	// WakeFailed: the revision's wake-up failed while the request waited
	// (Waiter.Failure says why).
	WakeFailed
)

// Notifier is told, once, that a held request left Waiting (see Waiter).
// A pointer type implements it without an allocation per hold, where a
// closure would cost one.
type Notifier interface {
	Notify(w *Waiter)
}

// NotifyFunc adapts a function to Notifier.
type NotifyFunc func(*Waiter)

// Notify calls f(w).
func (f NotifyFunc) Notify(w *Waiter) { f(w) }

// Waiter is one held request. Notify is called once, outside every lock,
// when it leaves Waiting for Granted, TimedOut or WakeFailed (not for
// Cancel); it runs
// on whatever goroutine or thread made the change and must not block.
type Waiter struct {
	r       *Revision
	state   Outcome // guarded by r.mu
	backend *Backend
	// deadline: the hold timeout ends the wait then (Revision.sweep).
	deadline time.Time
	notify   Notifier
	failure  *WakeFailure // WakeFailed only
	// notBefore: granted only once the revision installed this many
	// updates (HoldForUpdate); 0 for Hold.
	notBefore uint64
}

// Failure returns why the wake-up failed (WakeFailed only).
func (w *Waiter) Failure() *WakeFailure {
	w.r.mu.Lock()
	defer w.r.mu.Unlock()
	return w.failure
}

// Outcome returns where w stands; read it in Notify or after it.
func (w *Waiter) Outcome() Outcome {
	w.r.mu.Lock()
	defer w.r.mu.Unlock()
	return w.state
}

// Claim returns where w stands and, when Granted, hands its backend to
// the caller like Take (one lock for both; nil backend otherwise).
func (w *Waiter) Claim() (Outcome, *Backend) {
	w.r.mu.Lock()
	defer w.r.mu.Unlock()
	st, b := w.state, w.backend
	w.backend = nil
	return st, b
}

// Backend returns the backend granted to w (Granted only); the caller owns
// the slot and frees it with Revision.Release.
func (w *Waiter) Backend() *Backend {
	w.r.mu.Lock()
	defer w.r.mu.Unlock()
	return w.backend
}

// stopWaitingForUpdate lets a HoldForUpdate waiter still waiting be
// granted without the update (UpdateWait passed) and dispatches.
func (w *Waiter) stopWaitingForUpdate() {
	r := w.r
	r.mu.Lock()
	lifted := w.state == Waiting && w.notBefore > 0
	w.notBefore = 0
	r.mu.Unlock()
	if lifted {
		r.dispatch()
	}
}

// Cancel ends w (its request went away). wasWaiting reports that w was
// still waiting, so Notify will never be called for it; otherwise Notify
// has run or is running. b is the backend when w had been granted one and
// not yet taken (Backend): the caller frees it with Release.
func (w *Waiter) Cancel() (b *Backend, wasWaiting bool) {
	r := w.r
	r.mu.Lock()
	defer r.mu.Unlock()
	switch w.state {
	case Waiting:
		w.state = Canceled
		r.unhold()
		r.compactLocked()
		return nil, true
	case Granted:
		b = w.backend
		w.backend = nil
		w.state = Canceled
		return b, false
	}
	return nil, false
}

// Take hands a Granted w's backend to the caller (nil otherwise); after it
// Cancel returns no backend.
func (w *Waiter) Take() *Backend {
	w.r.mu.Lock()
	defer w.r.mu.Unlock()
	b := w.backend
	w.backend = nil
	return b
}
