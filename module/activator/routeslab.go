//go:build cgo

package main

import (
	"sync"
	"sync/atomic"

	"github.com/thaw-dev/thaw/module/state"
)

// Per-route configurations live in a slab, and Envoy holds a route's slab
// index + 1 as its per-route configuration pointer (never a Go pointer),
// as it holds a filter's. Envoy creates one per revision route at start
// (100,000 at 100,000 idle revisions) and again for every route each time
// it rebuilds its route table, and each request of a revision route reads
// its configuration. A runtime/cgo handle per route cost an allocation
// and a sync.Map insert (a hash trie whose cache misses grew with the
// route count, ~125 B per route), and a trie lookup per request; here an
// insert takes a free slot under a mutex and a lookup is two loads and
// an index.

const (
	routeChunkBits = 12
	routeChunkSize = 1 << routeChunkBits
)

var (
	// routeChunks is the slab's chunk list, replaced whole (under
	// routeMu) when a chunk is added, so readers load it without a lock.
	routeChunks  atomic.Pointer[[]*[routeChunkSize]routeCfg]
	routeMu      sync.Mutex
	routeFree    []uint32 // free indices, under routeMu
	routeNext    uint32   // indices below it were issued, under routeMu
	routeMaxCfgs = uint32(4 * state.MaxRevisions)
)

// putRouteCfg stores rc and returns its handle (index + 1), or 0 when
// routeMaxCfgs configurations are live (the module's memory bound:
// a route table and its replacement, with splits, stay far below).
func putRouteCfg(rc routeCfg) uintptr {
	routeMu.Lock()
	defer routeMu.Unlock()
	var i uint32
	if n := len(routeFree); n > 0 {
		i = routeFree[n-1]
		routeFree = routeFree[:n-1]
	} else {
		if routeNext >= routeMaxCfgs {
			return 0
		}
		i = routeNext
		routeNext++
		chunks := routeChunks.Load()
		if chunks == nil || int(i>>routeChunkBits) >= len(*chunks) {
			var grown []*[routeChunkSize]routeCfg
			if chunks != nil {
				grown = append(grown, *chunks...)
			}
			grown = append(grown, new([routeChunkSize]routeCfg))
			routeChunks.Store(&grown)
		}
	}
	*routeSlot(uintptr(i) + 1) = rc
	return uintptr(i) + 1
}

// routeSlot returns the slot of handle h (issued by putRouteCfg).
func routeSlot(h uintptr) *routeCfg {
	i := uint32(h - 1)
	return &(*routeChunks.Load())[i>>routeChunkBits][i&(routeChunkSize-1)]
}

// routeCfgOf returns the configuration of handle h; Envoy passes only
// handles putRouteCfg returned and not yet freed.
func routeCfgOf(h uintptr) *routeCfg { return routeSlot(h) }

// freeRouteCfg clears handle h's slot and makes it reusable (Envoy's
// destroy hook, once per handle, after the last request of the route).
func freeRouteCfg(h uintptr) {
	routeMu.Lock()
	*routeSlot(h) = routeCfg{}
	routeFree = append(routeFree, uint32(h-1))
	routeMu.Unlock()
}
