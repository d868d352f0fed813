package revision

// A revision's first ready backend is the step a woken revision's held
// requests wait for: everything after it (the endpoints sent to Envoy, its
// ACK, the activator told) is on the request's path. The holdoff that
// batches bursts would add its whole length to every cold start (5 ms of
// DefaultHoldoff against a 20 ms cold-start overhead budget; measured in
// docs/scaling.md, "Where a cold start's time goes at 100,000").
//
// So a first ready backend is published at once, unless a snapshot was
// published less than Holdoff ago: then it joins the batch the holdoff
// publishes, as before. Publications stay at most about two per Holdoff,
// and a burst (many revisions getting their first backend at thaw's start)
// is still batched after its first change.

// publishFirstBackend publishes the pending changes now if the last
// publication was at least Holdoff ago. Run's pending kick then finds
// nothing left to publish.
func (r *Registry) publishFirstBackend() {
	if r.opts.Holdoff <= 0 {
		return // published by the setter already
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.opts.Clock.Since(r.publishedAt) < r.opts.Holdoff {
		return
	}
	r.publishLocked()
}
