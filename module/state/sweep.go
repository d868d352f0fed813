package state

import "time"

// Hold timeouts: one timer per revision, not one per held request.
//
// Each held request carries its deadline (Waiter.deadline); the revision
// arms its sweep timer for the earliest deadline of the requests it
// holds, and the sweep ends every request whose deadline passed, then
// re-arms for the earliest one left. With one hold timeout per revision
// deadlines arrive in FIFO order, so a hold arms the timer only when none
// is armed or its deadline comes first, and a grant costs nothing. A
// timer per held request (time.AfterFunc and Stop, measured 0.3-0.9 µs
// and one allocation on the 2-core machine, the Stop often on another
// P's timer heap) was the largest Go cost of a held request
// (docs/activator.md, *Measured*).

// armLocked makes the sweep run no later than deadline (r.mu held).
func (r *Revision) armLocked(deadline time.Time) {
	if !r.sweepAt.IsZero() && !deadline.Before(r.sweepAt) {
		return
	}
	r.sweepAt = deadline
	d := time.Until(deadline)
	if r.sweepTimer == nil {
		r.sweepTimer = time.AfterFunc(d, r.sweep)
		return
	}
	r.sweepTimer.Reset(d)
}

// sweep ends with TimedOut every held request whose deadline passed,
// re-arms for the earliest deadline left, and notifies the ended
// requests outside the lock. One pass over the queue, which
// compactLocked and the queue depth bound.
func (r *Revision) sweep() {
	var expired []*Waiter
	r.mu.Lock()
	now := time.Now()
	r.sweepAt = time.Time{}
	var next time.Time
	for i := r.head; i < len(r.queue); i++ {
		w := r.queue[i]
		if w == nil || w.state != Waiting {
			continue
		}
		if !w.deadline.After(now) {
			w.state = TimedOut
			r.unhold()
			expired = append(expired, w)
			continue
		}
		if next.IsZero() || w.deadline.Before(next) {
			next = w.deadline
		}
	}
	if !next.IsZero() {
		r.armLocked(next)
	}
	r.compactLocked()
	r.mu.Unlock()
	for _, w := range expired {
		w.notify.Notify(w)
	}
	r.t.holdTimedOut(r, len(expired))
}
