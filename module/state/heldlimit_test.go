package state

import (
	"errors"
	"testing"
	"time"
)

// TestHeldLimitOverAllRevisions: Update.MaxHeld bounds the requests held
// at once over every revision; past it Hold answers ErrHeldLimit and the
// refusal is counted once for the next report; a request leaving the
// queue (granted, timed out, canceled) frees its place; only full updates
// set the bound.
func TestHeldLimitOverAllRevisions(t *testing.T) {
	tab := NewTable(time.Minute, 100)
	u := &Update{Full: true, MaxHeld: 2, Revisions: []RevisionUpdate{
		{Key: "ns/a", QueueDepth: 100, HoldTimeoutMs: 60000},
		{Key: "ns/b", QueueDepth: 100, HoldTimeoutMs: 60000},
	}}
	if err := tab.Apply(u); err != nil {
		t.Fatal(err)
	}
	a, b := tab.Lookup("ns/a"), tab.Lookup("ns/b")
	wa, err := a.Hold(func(*Waiter) {})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Hold(func(*Waiter) {}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Hold(func(*Waiter) {}); !errors.Is(err, ErrHeldLimit) {
		t.Fatalf("third hold over two revisions: %v, want ErrHeldLimit", err)
	}
	if _, err := a.HoldForUpdate(func(*Waiter) {}); !errors.Is(err, ErrHeldLimit) {
		t.Fatalf("HoldForUpdate at the bound: %v, want ErrHeldLimit", err)
	}
	if n := tab.TakeHeldLimited(); n != 2 {
		t.Fatalf("TakeHeldLimited = %d, want 2", n)
	}
	if n := tab.TakeHeldLimited(); n != 0 {
		t.Fatalf("TakeHeldLimited again = %d, want 0", n)
	}
	if tab.HeldTotal() != 2 {
		t.Fatalf("HeldTotal = %d, want 2", tab.HeldTotal())
	}

	wa.Cancel()
	if tab.HeldTotal() != 1 {
		t.Fatalf("HeldTotal after a cancel = %d, want 1", tab.HeldTotal())
	}
	if _, err := a.Hold(func(*Waiter) {}); err != nil {
		t.Fatalf("hold after a cancel freed a place: %v", err)
	}

	// A backend for ns/b grants its held request: the place is freed.
	tab.Apply(&Update{Revisions: []RevisionUpdate{{Key: "ns/b", QueueDepth: 100, HoldTimeoutMs: 60000,
		Backends: []BackendUpdate{{Addr: "127.0.0.1:1"}}}}})
	if tab.HeldTotal() != 1 {
		t.Fatalf("HeldTotal after a grant = %d, want 1", tab.HeldTotal())
	}

	// A partial update keeps the bound; a full one without it lifts it.
	tab.Apply(&Update{Revisions: []RevisionUpdate{{Key: "ns/a", QueueDepth: 100, HoldTimeoutMs: 60000}}})
	if _, err := a.Hold(func(*Waiter) {}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Hold(func(*Waiter) {}); !errors.Is(err, ErrHeldLimit) {
		t.Fatalf("bound lost on a partial update: %v", err)
	}
	u.MaxHeld = 0
	tab.Apply(u)
	for i := 0; i < 10; i++ {
		if _, err := a.Hold(func(*Waiter) {}); err != nil {
			t.Fatalf("hold %d with no bound: %v", i, err)
		}
	}
}

// TestHeldLimitTimeoutFreesPlace: a request that times out leaves the
// bound's count.
func TestHeldLimitTimeoutFreesPlace(t *testing.T) {
	tab := NewTable(time.Minute, 10)
	tab.Apply(&Update{Full: true, MaxHeld: 1, Revisions: []RevisionUpdate{{Key: "ns/a", QueueDepth: 10, HoldTimeoutMs: 1}}})
	done := make(chan struct{})
	if _, err := tab.Lookup("ns/a").Hold(func(*Waiter) { close(done) }); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("hold never timed out")
	}
	if tab.HeldTotal() != 0 {
		t.Fatalf("HeldTotal after the timeout = %d, want 0", tab.HeldTotal())
	}
}
