package extproc

import (
	"sync"
	"sync/atomic"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
)

// maxCachedRoutes bounds routeCache: backends come and go, and addresses of
// gone ones are never looked up again. Past the bound the cache starts over.
const maxCachedRoutes = 4096

// routeCache keeps the routing answers per backend address, so the request
// path builds no message: answers are immutable once built, and gRPC only
// reads them. Lookups take no lock (sync.Map's read path).
type routeCache struct {
	m sync.Map // address → *routePair
	n atomic.Int64
}

// routePair is one backend's two answers: with and without the switch to
// ShortMode.
type routePair struct {
	long, short *extprocv3.ProcessingResponse
}

// to returns the answer naming backend addr; short adds the mode_override
// to ShortMode.
func (c *routeCache) to(addr string, short bool) *extprocv3.ProcessingResponse {
	v, ok := c.m.Load(addr)
	if !ok {
		if c.n.Add(1) > maxCachedRoutes {
			c.m.Clear()
			c.n.Store(1)
		}
		v, _ = c.m.LoadOrStore(addr, &routePair{long: routeTo(addr, false), short: routeTo(addr, true)})
	}
	p := v.(*routePair)
	if short {
		return p.short
	}
	return p.long
}
