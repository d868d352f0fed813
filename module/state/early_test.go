package state

import (
	"testing"
	"time"
)

// TestEarlyBackendKeepsItsSlots: an unconfirmed backend takes requests
// (Early, not counted in Confirmed); when the next update lists it
// confirmed it is the same Backend with the same in-flight count, so the
// slots are never exceeded across the change of cluster.
func TestEarlyBackendKeepsItsSlots(t *testing.T) {
	tab := NewTable(time.Minute, 10)
	rev := func(unconfirmed bool) *Update {
		return &Update{Revisions: []RevisionUpdate{{Key: "ns/a", QueueDepth: 10, HoldTimeoutMs: 1000,
			Backends: []BackendUpdate{{Addr: "127.0.0.1:80", Slots: 2, Unconfirmed: unconfirmed}}}}}
	}
	if err := tab.Apply(rev(true)); err != nil {
		t.Fatal(err)
	}
	r := tab.Lookup("ns/a")
	if r.Confirmed() != 0 {
		t.Fatalf("confirmed %d, want 0", r.Confirmed())
	}
	b := r.Acquire()
	if b == nil || !b.Early() {
		t.Fatalf("acquire: %v, want the early backend", b)
	}
	r.StartEarly()
	if err := tab.Apply(rev(false)); err != nil {
		t.Fatal(err)
	}
	if r.Confirmed() != 1 || b.Early() || !b.JustConfirmed() {
		t.Fatalf("after the ACK: confirmed %d early %v just confirmed %v, want 1 false true", r.Confirmed(), b.Early(), b.JustConfirmed())
	}
	b2 := r.Acquire()
	if b2 != b {
		t.Fatalf("second acquire: %p, want the same backend %p", b2, b)
	}
	if b3 := r.Acquire(); b3 != nil {
		t.Fatalf("third acquire on 2 slots got %s (in flight %d)", b3.Addr, b.InFlight())
	}
	if got := r.EarlyInFlight(); got != 1 {
		t.Fatalf("early in flight %d, want 1", got)
	}
	if err := tab.Apply(rev(false)); err != nil {
		t.Fatal(err)
	}
	if b.JustConfirmed() {
		t.Fatal("still just confirmed after a second confirmed update")
	}
	r.EndEarly()
	r.Release(b)
	r.Release(b2)
	if b.InFlight() != 0 || r.EarlyInFlight() != 0 {
		t.Fatalf("after release: in flight %d early %d", b.InFlight(), r.EarlyInFlight())
	}
}

// TestReportEarlyBounded: a report's early count is part of its in-flight
// count; above it, or negative, is refused.
func TestReportEarlyBounded(t *testing.T) {
	for _, tc := range []struct {
		msg string
		ok  bool
	}{
		{`{"node":"n","revisions":[{"key":"ns/a","held":0,"inFlight":2,"early":2}]}`, true},
		{`{"node":"n","revisions":[{"key":"ns/a","held":0,"inFlight":1,"early":2}]}`, false},
		{`{"node":"n","revisions":[{"key":"ns/a","held":0,"inFlight":1,"early":-1}]}`, false},
	} {
		_, err := DecodeReport([]byte(tc.msg))
		if (err == nil) != tc.ok {
			t.Errorf("%s: err %v, want ok %v", tc.msg, err, tc.ok)
		}
	}
}
