package state

import (
	"sync/atomic"
	"testing"
	"time"
)

// TestHoldForUpdateNeverPinsToStaleBackend: the removal ordering (see
// docs/activator.md, *Removal ordering*). A request held because Envoy's
// cluster already dropped every host is granted nothing from the state
// it was held under: not at once, not when a slot frees, not ahead of
// FIFO; the update that removes the last backend pokes thaw; the update
// that brings a backend grants it, in order.
func TestHoldForUpdateNeverPinsToStaleBackend(t *testing.T) {
	tab := NewTable(time.Minute, 10)
	var pokes atomic.Int32
	tab.SetOnPoke(func(string) { pokes.Add(1) })
	tab.Apply(update("ns/a", 10, time.Minute, BackendUpdate{Addr: "127.0.0.1:1", Slots: 1}))
	r := tab.Lookup("ns/a")
	busy := r.Acquire() // the stale backend's only slot, in flight
	if busy == nil {
		t.Fatal("first request got no slot")
	}

	var granted []string
	notify := func(name string) func(*Waiter) {
		return func(w *Waiter) { granted = append(granted, name) }
	}
	stale, err := r.HoldForUpdate(notify("stale"))
	if err != nil || stale.Outcome() != Waiting {
		t.Fatalf("HoldForUpdate = %v, %v; want Waiting", stale.Outcome(), err)
	}
	if b := r.Acquire(); b != nil {
		t.Fatalf("Acquire overtook a held request: %s", b.Addr)
	}
	next, err := r.Hold(notify("next"))
	if err != nil || next.Outcome() != Waiting {
		t.Fatalf("Hold behind it = %v, %v; want Waiting", next.Outcome(), err)
	}

	r.Release(busy) // a slot frees on the backend Envoy already dropped
	if stale.Outcome() != Waiting || next.Outcome() != Waiting || len(granted) != 0 {
		t.Fatalf("after a release: stale %v, next %v, granted %v; want both waiting (FIFO behind the update)",
			stale.Outcome(), next.Outcome(), granted)
	}
	if r.InFlight() != 0 {
		t.Fatalf("InFlight = %d, want 0", r.InFlight())
	}

	pokes.Store(0)
	tab.Apply(update("ns/a", 10, time.Minute)) // the removal reaches the module
	if stale.Outcome() != Waiting || len(granted) != 0 {
		t.Fatalf("after the removal: %v granted %v, want waiting", stale.Outcome(), granted)
	}
	if pokes.Load() != 1 {
		t.Fatalf("pokes after the removal with requests held = %d, want 1", pokes.Load())
	}

	tab.Apply(update("ns/a", 10, time.Minute, BackendUpdate{Addr: "127.0.0.1:2", Slots: 1}))
	if stale.Outcome() != Granted || stale.Backend().Addr != "127.0.0.1:2" {
		t.Fatalf("after a backend came: %v, want Granted 127.0.0.1:2", stale.Outcome())
	}
	if next.Outcome() != Waiting {
		t.Fatalf("next = %v, want Waiting (one slot)", next.Outcome())
	}
	r.Release(stale.Take())
	if next.Outcome() != Granted || len(granted) != 2 || granted[0] != "stale" || granted[1] != "next" {
		t.Fatalf("grants %v, next %v; want [stale next], next Granted", granted, next.Outcome())
	}
	r.Release(next.Take())
	if r.InFlight() != 0 || r.Held() != 0 {
		t.Fatalf("InFlight %d Held %d, want 0 0", r.InFlight(), r.Held())
	}
}

// TestHoldForUpdateAfterAnyUpdate: an update that keeps the same backend
// (Envoy's view caught up, or thaw resent the state) grants the request:
// the hold waits for an update, not for a change of backends.
func TestHoldForUpdateAfterAnyUpdate(t *testing.T) {
	tab := NewTable(time.Minute, 10)
	u := update("ns/a", 10, time.Minute, BackendUpdate{Addr: "127.0.0.1:1", Slots: 0})
	tab.Apply(u)
	r := tab.Lookup("ns/a")
	w, err := r.HoldForUpdate(func(*Waiter) {})
	if err != nil || w.Outcome() != Waiting {
		t.Fatalf("HoldForUpdate = %v, %v; want Waiting", w.Outcome(), err)
	}
	tab.Apply(u)
	if w.Outcome() != Granted {
		t.Fatalf("after an update: %v, want Granted", w.Outcome())
	}
	r.Release(w.Take())
}
