//go:build cgo

package main

// rehold holds a granted request once more, for the next state update,
// when Envoy's cluster lists fewer hosts than the revision's state has
// backends (a removal reached Envoy first, so the granted backend may be
// gone: docs/activator.md, *Removal ordering*); the granted slot is freed
// after the new hold is queued. At most once per request, so the wait
// stays bounded by two hold timeouts. false: pin the grant as usual (not
// behind, already re-held, or the new hold was refused).
func rehold(ep uintptr, f *filter) bool {
	h := f.hold
	if f.reheld || h == nil {
		return false
	}
	if n := f.rev.Confirmed(); n == 0 || !envoyBehind(ep, f, n) {
		return false
	}
	if f.cluster != "" && f.backend.JustConfirmed() {
		// Granted while early, confirmed since, and this worker's view
		// lags the ACK: no update is coming, so go through DstCluster
		// (early.go) instead of waiting state.UpdateWait for one.
		f.viaDst = true
		return false
	}
	f.reheld = true
	h.refs.Add(1) // the new notifier's reference
	w, err := f.rev.HoldForUpdateNotify(h)
	if err != nil {
		h.drop()
		return false
	}
	b := f.backend
	f.backend, f.waiter = nil, w
	f.rev.Release(b)
	return true
}
