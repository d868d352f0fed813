package state

import (
	"fmt"
	"strings"
)

// HoldTimeout describes requests a revision's hold timeout ended
// (Table.SetOnHoldTimeout): enough to tell, from Envoy's log, a revision
// thaw never sent a backend for (Backends empty: its wake, or this
// Envoy's ACK of the backend's endpoints, never reached the module) from
// one whose backends were all full or not yet routable here.
type HoldTimeout struct {
	// Key is the revision ("namespace/name"); Expired how many requests
	// this sweep ended.
	Key     string
	Expired int
	// Backends are the revision's backends in the module's state now,
	// with their slots and requests in flight.
	Backends []BackendLoad
	// Updates counts the state updates that concerned the revision
	// since the module loaded.
	Updates uint64
}

// BackendLoad is one backend of a HoldTimeout.
type BackendLoad struct {
	Addr     string
	Slots    int32 // 0 unlimited, -1 none
	InFlight int32
}

// String is the log line's body.
func (h HoldTimeout) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d request(s) of %s held past the hold timeout; state updates for it: %d; backends:", h.Expired, h.Key, h.Updates)
	if len(h.Backends) == 0 {
		b.WriteString(" none (thaw has not sent one: the revision did not wake, or this Envoy's ACK of its endpoints did not reach thaw)")
	}
	for _, l := range h.Backends {
		fmt.Fprintf(&b, " %s (slots %d, in flight %d)", l.Addr, l.Slots, l.InFlight)
	}
	return b.String()
}

// SetOnHoldTimeout installs fn, called after a sweep ended held requests
// at their hold timeout, on the sweep's timer goroutine (never an Envoy
// thread), outside every lock. Safe while requests run.
func (t *Table) SetOnHoldTimeout(fn func(HoldTimeout)) { t.onHoldTimeout.Store(&fn) }

// holdTimedOut reports expired requests of r to the hook, if any.
func (t *Table) holdTimedOut(r *Revision, expired int) {
	fn := t.onHoldTimeout.Load()
	if fn == nil || expired == 0 {
		return
	}
	h := HoldTimeout{Key: r.Key, Expired: expired, Updates: r.updates.Load()}
	for _, b := range r.Backends() {
		h.Backends = append(h.Backends, BackendLoad{Addr: b.Addr, Slots: b.Slots(), InFlight: b.InFlight()})
	}
	(*fn)(h)
}
