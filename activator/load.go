package activator

import "github.com/thaw-dev/thaw/revision"

// BackendInFlight returns, per backend address ("ip:port") of revision key
// that the activator currently offers, the requests it released to that
// backend and that are still in flight; backends with none are absent, and
// an unknown revision gives an empty map. It counts only requests that went
// through the activator (proxy mode), not the ones Envoy routed straight to
// the backend in serve mode. The platform uses it to prefer idle pods when
// scaling down.
func (a *Activator) BackendInFlight(key revision.Key) map[string]int {
	out := map[string]int{}
	t := a.throttler(key)
	if t == nil {
		return out
	}
	for _, p := range t.state.Load().pods {
		if n := p.inFlight.Load(); n > 0 {
			out[p.addr] = int(n)
		}
	}
	return out
}
