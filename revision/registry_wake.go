package revision

// A revision's first ready backend is the step a woken revision's held
// requests wait for: everything after it (the endpoints sent to Envoy, its
// ACK, the activator told) is on the request's path. The holdoff that
// batches bursts would add its whole length to every cold start (5 ms of
// DefaultHoldoff against a 20 ms cold-start overhead budget; measured in
// docs/scaling.md, "Where a cold start's time goes at 100,000").
//
// So while Run runs, a first ready backend is published at once when the
// last publication is at least Holdoff old, and otherwise as soon as it
// is (Holdoff after the last publication, not Holdoff after this change).
// Publications stay at most about two per Holdoff, and a burst (many
// revisions getting their first backend at once) is still batched.

// publishFirstBackend publishes the pending changes now, or schedules
// their publication for Holdoff after the last one. Run's pending kick
// then finds nothing left to publish.
func (r *Registry) publishFirstBackend() {
	if r.opts.Holdoff <= 0 {
		return // published by the setter already
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.running || r.firstDue {
		return // Run publishes; or a publication is already due soon
	}
	wait := r.opts.Holdoff - r.opts.Clock.Since(r.publishedAt)
	if wait <= 0 {
		r.publishLocked()
		return
	}
	r.firstDue = true
	t := r.opts.Clock.NewTimer(wait)
	go func() {
		<-t.C()
		r.mu.Lock()
		defer r.mu.Unlock()
		r.firstDue = false
		r.publishLocked()
	}()
}

func (r *Registry) setRunning(on bool) {
	r.mu.Lock()
	r.running = on
	r.mu.Unlock()
}
