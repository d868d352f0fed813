package state

import (
	"math/rand/v2"
	"sync/atomic"
)

// Backend is one ready backend of a revision with this Envoy's slots on it.
// Its in-flight count is shared by every request that holds one of its
// slots; a Backend removed by an update keeps counting down as those
// requests end, and takes no new request until an update lists its
// address again (then the same Backend, with its count, comes back:
// Revision.set).
type Backend struct {
	// Addr is "ip:port".
	Addr string
	// word packs what a slot is taken against, so one compare-and-swap
	// sees it whole: bits 0-31 the requests holding a slot (in flight),
	// bits 32-62 the slots (0 unlimited), bit 63 set once an update
	// removed the backend. A request can then never take a slot on a
	// backend that an update dropped after the request loaded the old
	// backend list: the drop and the take are ordered on this word.
	word atomic.Uint64
	// early is set while this Envoy has not ACKed the backend
	// (BackendUpdate.Unconfirmed, early.go).
	early atomic.Bool
	// fresh is set by the update that confirmed an early backend, until
	// the next update that lists it (JustConfirmed).
	fresh atomic.Bool
}

const (
	inFlightMask = 1<<32 - 1
	slotsShift   = 32
	slotsMask    = 1<<31 - 1
	removedBit   = 1 << 63
)

func unpack(w uint64) (inFlight, slots uint32, removed bool) {
	return uint32(w & inFlightMask), uint32(w>>slotsShift) & slotsMask, w&removedBit != 0
}

// InFlight returns the requests holding a slot of b now.
func (b *Backend) InFlight() int32 { return int32(b.word.Load() & inFlightMask) }

// Slots returns this Envoy's slots on b (0 unlimited, -1 none: no share
// here, or removed by the last update that concerned it).
func (b *Backend) Slots() int32 {
	_, s, removed := unpack(b.word.Load())
	if removed {
		return -1
	}
	return int32(s)
}

// tryTake takes a slot by compare-and-swap; false when b is full or
// removed.
func (b *Backend) tryTake() bool {
	for {
		w := b.word.Load()
		n, s, removed := unpack(w)
		if removed || (s != 0 && n >= s) {
			return false
		}
		if b.word.CompareAndSwap(w, w+1) {
			return true
		}
	}
}

// release frees one slot taken by tryTake. A count already at 0 (a
// release without a take: a caller's bug) stays 0 rather than borrow
// from the slots.
func (b *Backend) release() {
	for {
		w := b.word.Load()
		if w&inFlightMask == 0 || b.word.CompareAndSwap(w, w-1) {
			return
		}
	}
}

// free returns true when b has a free slot now (racy hint only).
func (b *Backend) free() bool {
	n, s, removed := unpack(b.word.Load())
	return !removed && (s == 0 || n < s)
}

// setSlots lists b with s slots (0 unlimited, above 0 a limit; a
// negative s removes it), keeping its in-flight count.
func (b *Backend) setSlots(s int32) {
	if s < 0 {
		b.remove()
		return
	}
	for {
		w := b.word.Load()
		if b.word.CompareAndSwap(w, w&inFlightMask|uint64(uint32(s)&slotsMask)<<slotsShift) {
			return
		}
	}
}

// remove marks b removed and returns its in-flight count at that moment:
// from then on no slot is taken on b, so a count of 0 stays 0 and b can
// be forgotten; above 0, requests still run on b's address.
func (b *Backend) remove() int32 {
	for {
		w := b.word.Load()
		if b.word.CompareAndSwap(w, w|removedBit) {
			return int32(w & inFlightMask)
		}
	}
}

// pick takes a slot on the less loaded of two random backends with a free
// slot (Knative's activator: best of two random choices), falling back to a
// scan from a random start so a free slot is never missed. nil: all full.
// No lock, no allocation.
func pick(bs []*Backend) *Backend {
	n := len(bs)
	switch n {
	case 0:
		return nil
	case 1:
		if bs[0].tryTake() {
			return bs[0]
		}
		return nil
	}
	i := rand.IntN(n)
	j := rand.IntN(n - 1)
	if j >= i {
		j++
	}
	a, b := bs[i], bs[j]
	if !a.free() || (b.free() && b.InFlight() < a.InFlight()) {
		a, b = b, a
	}
	if a.tryTake() {
		return a
	}
	if b.tryTake() {
		return b
	}
	for k := 0; k < n; k++ {
		c := bs[(i+k)%n]
		if c.tryTake() {
			return c
		}
	}
	return nil
}
