package state

import (
	"strings"
	"testing"
	"time"
)

// TestHoldTimeoutReported: requests a hold timeout ends are reported to
// the hook with what the module knew of the revision then: no backend
// (thaw never sent one), or its backends with their slots and requests
// in flight (all full).
func TestHoldTimeoutReported(t *testing.T) {
	for _, tc := range []struct {
		name     string
		backends []BackendUpdate
		busy     bool
		want     string
	}{
		{name: "noBackend", want: "backends: none"},
		{name: "full", backends: []BackendUpdate{{Addr: "127.0.0.1:1", Slots: 1}}, busy: true,
			want: "backends: 127.0.0.1:1 (slots 1, in flight 1)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tab := NewTable(time.Minute, 10)
			got := make(chan HoldTimeout, 4)
			tab.SetOnHoldTimeout(func(h HoldTimeout) { got <- h })
			tab.Apply(update("ns/a", 10, 20*time.Millisecond, tc.backends...))
			r := tab.Lookup("ns/a")
			if tc.busy && r.Acquire() == nil {
				t.Fatal("no slot")
			}
			notified := make(chan *Waiter, 1)
			w, err := r.Hold(func(w *Waiter) { notified <- w })
			if err != nil {
				t.Fatal(err)
			}
			if out := waitOutcome(t, w, notified); out != TimedOut {
				t.Fatalf("held request ended %v, want TimedOut", out)
			}
			select {
			case h := <-got:
				if h.Key != "ns/a" || h.Expired != 1 || h.Updates != 1 {
					t.Errorf("reported %+v, want ns/a, 1 expired, 1 update", h)
				}
				if s := h.String(); !strings.Contains(s, tc.want) {
					t.Errorf("line %q does not contain %q", s, tc.want)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the hold timeout was not reported")
			}
		})
	}
}
