package extproc

import (
	lru "github.com/hashicorp/golang-lru/v2"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
)

// maxCachedRoutes bounds routeCache (entries, one per backend address; a
// pair of answers takes about 2.2 KiB of heap, so the bound is about 36 MiB
// at most).
// Backends come and go, and addresses of gone ones are never looked up
// again: the least recently used address is evicted first, so a fleet with
// more live backends than the bound keeps its busiest ones cached instead of
// starting over.
const maxCachedRoutes = 1 << 14

// routeCache keeps the routing answers per backend address, so the request
// path builds no message: answers are immutable once built, and gRPC only
// reads them. A lookup takes the LRU's lock for the time of a map lookup and
// a list move.
type routeCache struct {
	lru *lru.Cache[string, *routePair]
}

// routePair is one backend's two answers: with and without the switch to
// ShortMode.
type routePair struct {
	long, short *extprocv3.ProcessingResponse
}

// newRouteCache returns a cache of at most size addresses (size > 0).
func newRouteCache(size int) routeCache {
	c, err := lru.New[string, *routePair](size)
	if err != nil {
		panic(err) // only for size <= 0, a wiring bug
	}
	return routeCache{lru: c}
}

// to returns the answer naming backend addr; short adds the mode_override
// to ShortMode.
func (c routeCache) to(addr string, short bool) *extprocv3.ProcessingResponse {
	p, ok := c.lru.Get(addr)
	if !ok {
		// Two requests may build the same pair at once; either is right.
		p = &routePair{long: routeTo(addr, false), short: routeTo(addr, true)}
		c.lru.Add(addr, p)
	}
	if short {
		return p.short
	}
	return p.long
}
