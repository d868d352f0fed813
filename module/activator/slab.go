//go:build cgo

package main

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/thaw-dev/thaw/module/state"
)

// A filter is one HTTP stream's state. Envoy holds its slab index (never a
// Go pointer) as the filter's module pointer.
type filter struct {
	id      uint32
	cfg     *filterConfig
	rev     *state.Revision
	cluster string // the route's cluster on a cluster route (clusterroute.go)
	// routed: on a cluster route, the request's route was resolved to
	// the cluster while it existed (request headers, backends listed and
	// not behind), so a resume keeps that route instead of setting the
	// header and clearing the route cache again (one route match fewer
	// per held request).
	routed  bool
	backend *state.Backend // slot this stream holds, freed once
	early   bool           // backend is reached through state.DstCluster (early.go)
	viaDst  bool           // rehold: the worker lags a just-confirmed backend's ACK
	waiter  *state.Waiter
	hold    *holdRef
	failed  bool
	// reheld: the request was held again once because its grant named a
	// backend Envoy had already dropped (rehold); never twice.
	reheld bool
	grpc   bool // the request is gRPC (answers take the gRPC form)
	// heldAt is when the request started waiting (held requests only).
	heldAt time.Time
	// coldStart: the response gets wake.HeaderColdStart with coldStartMs
	// (a held request of a revision whose wake policy asks for it).
	coldStart    bool
	coldStartMs  int64
	coldStartBuf [20]byte
}

// holdRef owns a held request's Envoy scheduler: whichever of the
// notifier (after its commit) and the filter's end drops the last
// reference deletes it, so a commit never races a delete and no lock is
// held across the call into Envoy.
type holdRef struct {
	sched uintptr
	refs  atomic.Int32
}

// Notify resumes the held request on its worker (state.Notifier) and
// drops the notifier's reference.
func (h *holdRef) Notify(*state.Waiter) {
	schedulerCommit(h.sched, 1)
	h.drop()
}

func (h *holdRef) drop() {
	if h.refs.Add(-1) == 0 {
		schedulerDelete(h.sched)
	}
}

// The slab: chunks of filters allocated on demand and never freed, ids
// reused through a free list. At most maxFilters streams at once per Envoy
// (the module's memory bound); past it a new stream gets a 503.
const (
	chunkBits  = 12
	chunkSize  = 1 << chunkBits
	maxChunks  = 256
	maxFilters = chunkSize * maxChunks
)

var (
	chunks  [maxChunks]atomic.Pointer[[chunkSize]filter]
	slabMu  sync.Mutex
	freeIDs []uint32
	nextID  uint32 = 1 // 0 is the null pointer
)

// newFilter returns a zeroed filter with a free id, or nil at maxFilters.
func newFilter() *filter {
	slabMu.Lock()
	var id uint32
	if n := len(freeIDs); n > 0 {
		id = freeIDs[n-1]
		freeIDs = freeIDs[:n-1]
	} else {
		if nextID >= maxFilters {
			slabMu.Unlock()
			return nil
		}
		id = nextID
		nextID++
		if c := id >> chunkBits; chunks[c].Load() == nil {
			chunks[c].Store(new([chunkSize]filter))
		}
	}
	slabMu.Unlock()
	f := &chunks[id>>chunkBits].Load()[id&(chunkSize-1)]
	*f = filter{id: id}
	return f
}

// lookupFilter returns the filter with id, or nil for an id never issued.
func lookupFilter(id uintptr) *filter {
	if id == 0 || id >= maxFilters {
		return nil
	}
	c := chunks[id>>chunkBits].Load()
	if c == nil {
		return nil
	}
	return &c[id&(chunkSize-1)]
}

func freeFilter(f *filter) {
	id := f.id
	*f = filter{}
	slabMu.Lock()
	freeIDs = append(freeIDs, id)
	slabMu.Unlock()
}
