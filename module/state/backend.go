package state

import (
	"math/rand/v2"
	"sync/atomic"
)

// Backend is one ready backend of a revision with this Envoy's slots on it.
// Its in-flight count is shared by every request that holds one of its
// slots; a Backend removed by an update keeps counting down as those
// requests end.
type Backend struct {
	// Addr is "ip:port".
	Addr     string
	slots    atomic.Int32 // 0 = unlimited, -1 = none here
	inFlight atomic.Int32
}

// InFlight returns the requests holding a slot of b now.
func (b *Backend) InFlight() int32 { return b.inFlight.Load() }

// tryTake takes a slot by compare-and-swap; false when b is full.
func (b *Backend) tryTake() bool {
	for {
		s := b.slots.Load()
		if s == 0 {
			b.inFlight.Add(1)
			return true
		}
		n := b.inFlight.Load()
		if n >= s {
			return false
		}
		if b.inFlight.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// free returns true when b has a free slot now (racy hint only).
func (b *Backend) free() bool {
	s := b.slots.Load()
	return s == 0 || b.inFlight.Load() < s
}

// Slots returns this Envoy's slots on b (0 unlimited, -1 none).
func (b *Backend) Slots() int32 { return b.slots.Load() }

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
	if !a.free() || (b.free() && b.inFlight.Load() < a.inFlight.Load()) {
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
