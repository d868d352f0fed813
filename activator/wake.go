package activator

import (
	"time"

	"github.com/thaw-dev/thaw/revision"
	"github.com/thaw-dev/thaw/wake"
)

// WakePolicy returns revision key's wake policy and whether the revision is
// at zero (no backend the activator may send requests to). It returns
// nil, false for an unknown revision and nil for a revision without a
// policy. One atomic load, no lock: holders call it before Acquire, and
// only on the activator path.
func (a *Activator) WakePolicy(key revision.Key) (*wake.Policy, bool) {
	t := a.throttler(key)
	if t == nil {
		return nil, false
	}
	st := t.state.Load()
	return st.wake, len(st.pods) == 0
}

// Wake asks the autoscaler to wake revision key without holding a request
// (a waiting page was sent instead). Like a held request's poke, at most
// once per report interval per revision; unknown revisions are ignored.
func (a *Activator) Wake(key revision.Key) {
	if t := a.throttler(key); t != nil {
		a.poke(t, a.opts.Clock.Now())
	}
}

// Now returns the activator's clock's time (holders measure hold times
// with the same clock that times holds out).
func (a *Activator) Now() time.Time { return a.opts.Clock.Now() }
