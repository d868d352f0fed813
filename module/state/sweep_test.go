package state

import (
	"testing"
	"time"
)

// waitOutcome waits (bounded) until w leaves Waiting and returns where it
// ended.
func waitOutcome(t *testing.T, w *Waiter, ch <-chan *Waiter) Outcome {
	t.Helper()
	select {
	case got := <-ch:
		if got != w {
			t.Fatal("notified another waiter")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("held request never notified")
	}
	return w.Outcome()
}

// TestHoldTimeoutSweep: one timer per revision ends each held request at
// its own deadline, in deadline order even when a shorter hold timeout
// (an update) makes a later request's deadline come first; a request
// whose deadline has not come keeps waiting and is granted later; the
// timer re-arms after it fired; nothing granted or canceled is ever
// timed out.
func TestHoldTimeoutSweep(t *testing.T) {
	tab := NewTable(time.Minute, 10)
	one := BackendUpdate{Addr: "127.0.0.1:1", Slots: 1}
	tab.Apply(update("ns/a", 10, time.Minute, one))
	r := tab.Lookup("ns/a")
	busy := r.Acquire()
	if busy == nil {
		t.Fatal("no slot")
	}
	notified := make(chan *Waiter, 10)
	notify := func(w *Waiter) { notified <- w }

	long, err := r.Hold(notify) // deadline a minute away
	if err != nil {
		t.Fatal(err)
	}
	canceled, err := r.Hold(notify)
	if err != nil {
		t.Fatal(err)
	}
	tab.Apply(update("ns/a", 10, 20*time.Millisecond, one))
	short, err := r.Hold(notify) // behind long in FIFO, deadline first
	if err != nil {
		t.Fatal(err)
	}
	if b, waiting := canceled.Cancel(); b != nil || !waiting {
		t.Fatalf("Cancel = %v, %v; want nil, true", b, waiting)
	}
	if got := waitOutcome(t, short, notified); got != TimedOut {
		t.Fatalf("short hold ended %v, want TimedOut", got)
	}
	if long.Outcome() != Waiting || r.Held() != 1 {
		t.Fatalf("long hold %v, held %d after the short one timed out; want Waiting, 1", long.Outcome(), r.Held())
	}
	if canceled.Outcome() != Canceled {
		t.Fatalf("canceled hold %v, want Canceled", canceled.Outcome())
	}

	again, err := r.Hold(notify) // the timer fired once: it must re-arm
	if err != nil {
		t.Fatal(err)
	}
	if got := waitOutcome(t, again, notified); got != TimedOut {
		t.Fatalf("second short hold ended %v, want TimedOut", got)
	}

	r.Release(busy)
	if got := waitOutcome(t, long, notified); got != Granted {
		t.Fatalf("long hold ended %v, want Granted", got)
	}
	r.Release(long.Take())
	if r.Held() != 0 || r.InFlight() != 0 || tab.HeldTotal() != 0 {
		t.Fatalf("held %d in flight %d total %d, want 0 0 0", r.Held(), r.InFlight(), tab.HeldTotal())
	}
	select {
	case w := <-notified:
		t.Fatalf("extra notification (%v)", w.Outcome())
	default:
	}
}

// TestHoldDoesNotAllocateATimer: a held request granted by a slot costs
// the Waiter and nothing for its timeout (the revision's one timer).
func TestHoldDoesNotAllocateATimer(t *testing.T) {
	tab := NewTable(time.Minute, 10)
	tab.Apply(update("ns/a", 10, time.Minute, BackendUpdate{Addr: "127.0.0.1:1", Slots: 1}))
	r := tab.Lookup("ns/a")
	held := r.Acquire()
	notify := func(*Waiter) {}
	allocs := testing.AllocsPerRun(1000, func() {
		w, err := r.Hold(notify)
		if err != nil {
			t.Fatal(err)
		}
		r.Release(held)
		held = w.Take()
	})
	want := 1.0
	if raceEnabled {
		want = 2 // the grant list escapes under the race detector
	}
	if allocs > want {
		t.Fatalf("hold and grant allocate %.1f times, want %.0f (the Waiter)", allocs, want)
	}
}
