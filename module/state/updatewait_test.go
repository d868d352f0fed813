package state

import (
	"testing"
	"time"
)

// TestHoldForUpdateGrantedWithoutUpdate: a request held for an update that
// never comes (Envoy's count lagged behind an addition, which brings no
// further update) is granted once UpdateWait passes, in FIFO order, not
// answered 503 at the hold timeout.
func TestHoldForUpdateGrantedWithoutUpdate(t *testing.T) {
	defer func(d time.Duration) { UpdateWait = d }(UpdateWait)
	UpdateWait = 10 * time.Millisecond
	tab := NewTable(time.Minute, 10)
	tab.Apply(update("ns/a", 10, time.Minute, BackendUpdate{Addr: "127.0.0.1:1", Slots: 1}))
	r := tab.Lookup("ns/a")
	notified := make(chan *Waiter, 2)
	notify := func(w *Waiter) { notified <- w }
	first, err := r.HoldForUpdate(notify)
	if err != nil || first.Outcome() != Waiting {
		t.Fatalf("HoldForUpdate = %v, %v; want Waiting", first.Outcome(), err)
	}
	second, err := r.Hold(notify)
	if err != nil || second.Outcome() != Waiting {
		t.Fatalf("Hold behind it = %v, %v; want Waiting (FIFO)", second.Outcome(), err)
	}
	for i, want := range []*Waiter{first, second} {
		select {
		case w := <-notified:
			if w != want || w.Outcome() != Granted {
				t.Fatalf("grant %d: waiter %p %v, want %p Granted", i, w, w.Outcome(), want)
			}
			r.Release(w.Take())
		case <-time.After(10 * time.Second):
			t.Fatalf("grant %d: none within 10 s without a state update (held %d)", i, r.Held())
		}
	}
	if r.Held() != 0 || r.InFlight() != 0 {
		t.Errorf("held %d, in flight %d after both released; want 0, 0", r.Held(), r.InFlight())
	}
}
