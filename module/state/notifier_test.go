package state

import (
	"testing"
	"time"
)

// countNotifier is a pointer Notifier, the shape the activator's holdRef
// has: storing it in a Waiter costs no allocation.
type countNotifier struct{ n int }

func (c *countNotifier) Notify(*Waiter) { c.n++ }

// TestHoldNotifyAllocatesOnlyTheWaiter: a held request with a pointer
// Notifier, granted when a slot frees and claimed, allocates the Waiter
// and nothing else (a closure per hold was a second allocation).
func TestHoldNotifyAllocatesOnlyTheWaiter(t *testing.T) {
	tab := NewTable(time.Minute, 10)
	tab.Apply(update("ns/a", 10, time.Minute, BackendUpdate{Addr: "127.0.0.1:1", Slots: 1}))
	r := tab.Lookup("ns/a")
	held := r.Acquire()
	n := &countNotifier{}
	allocs := testing.AllocsPerRun(1000, func() {
		w, err := r.HoldNotify(n)
		if err != nil {
			t.Fatal(err)
		}
		r.Release(held)
		st, b := w.Claim()
		if st != Granted || b == nil {
			t.Fatalf("claim: %v %v, want Granted with a backend", st, b)
		}
		held = b
	})
	want := 1.0
	if raceEnabled {
		want = 2 // the grant list escapes under the race detector
	}
	if allocs > want {
		t.Fatalf("hold, grant and claim allocate %.1f times, want %.0f (the Waiter)", allocs, want)
	}
	if n.n == 0 {
		t.Fatal("the Notifier was never told of a grant")
	}
}

// TestClaim: Claim reports the outcome and hands a granted backend over
// once; a second Claim, Take or Cancel gets no backend.
func TestClaim(t *testing.T) {
	tab := NewTable(time.Minute, 10)
	tab.Apply(update("ns/a", 10, time.Minute, BackendUpdate{Addr: "127.0.0.1:1", Slots: 1}))
	r := tab.Lookup("ns/a")
	first := r.Acquire()
	n := &countNotifier{}
	w, err := r.HoldNotify(n)
	if err != nil {
		t.Fatal(err)
	}
	if st, b := w.Claim(); st != Waiting || b != nil {
		t.Fatalf("before a grant: %v %v, want Waiting and no backend", st, b)
	}
	r.Release(first)
	if n.n != 1 {
		t.Fatalf("notified %d times, want 1", n.n)
	}
	st, b := w.Claim()
	if st != Granted || b == nil || b.Addr != "127.0.0.1:1" {
		t.Fatalf("after the grant: %v %v, want Granted 127.0.0.1:1", st, b)
	}
	if st, again := w.Claim(); st != Granted || again != nil {
		t.Fatalf("second claim: %v %v, want Granted and no backend", st, again)
	}
	if got, _ := w.Cancel(); got != nil {
		t.Fatal("Cancel after Claim returned the backend again")
	}
	r.Release(b)
	if r.InFlight() != 0 {
		t.Fatalf("in flight %d after release, want 0", r.InFlight())
	}
}
