package state

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func update(key string, depth int, hold time.Duration, backends ...BackendUpdate) *Update {
	return &Update{Revisions: []RevisionUpdate{{Key: key, QueueDepth: depth, HoldTimeoutMs: hold.Milliseconds(), Backends: backends}}}
}

func TestAcquireRespectsSlots(t *testing.T) {
	tab := NewTable(time.Minute, 10)
	tab.Apply(update("ns/a", 10, time.Minute, BackendUpdate{Addr: "127.0.0.1:1", Slots: 2}, BackendUpdate{Addr: "127.0.0.1:2", Slots: 1}))
	r := tab.Lookup("ns/a")
	var got []*Backend
	for {
		b := r.Acquire()
		if b == nil {
			break
		}
		got = append(got, b)
		if len(got) > 10 {
			t.Fatal("Acquire never ran out of slots")
		}
	}
	if len(got) != 3 {
		t.Fatalf("acquired %d slots, want 3", len(got))
	}
	if r.InFlight() != 3 {
		t.Fatalf("InFlight = %d, want 3", r.InFlight())
	}
	for _, b := range got {
		r.Release(b)
	}
	if r.InFlight() != 0 {
		t.Fatalf("InFlight after release = %d, want 0", r.InFlight())
	}
}

func TestUnlimitedAndNoShare(t *testing.T) {
	tab := NewTable(time.Minute, 10)
	tab.Apply(update("ns/a", 10, time.Minute, BackendUpdate{Addr: "127.0.0.1:1", Slots: -1}))
	if b := tab.Lookup("ns/a").Acquire(); b != nil {
		t.Fatalf("backend with no share here was picked: %s", b.Addr)
	}
	tab.Apply(update("ns/a", 10, time.Minute, BackendUpdate{Addr: "127.0.0.1:1", Slots: 0}))
	for i := 0; i < 100; i++ {
		if tab.Lookup("ns/a").Acquire() == nil {
			t.Fatalf("unlimited backend refused request %d", i)
		}
	}
}

func TestHoldGrantsFIFOOnRelease(t *testing.T) {
	tab := NewTable(time.Minute, 10)
	tab.Apply(update("ns/a", 10, time.Minute, BackendUpdate{Addr: "127.0.0.1:1", Slots: 1}))
	r := tab.Lookup("ns/a")
	b := r.Acquire()
	if b == nil {
		t.Fatal("first request got no slot")
	}
	var order []int
	var mu sync.Mutex
	var ws []*Waiter
	for i := 0; i < 3; i++ {
		i := i
		w, err := r.Hold(func(w *Waiter) {
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
		})
		if err != nil || w.Outcome() != Waiting {
			t.Fatalf("hold %d: %v %v", i, err, w.Outcome())
		}
		ws = append(ws, w)
	}
	if r.Acquire() != nil {
		t.Fatal("a newcomer overtook held requests")
	}
	for i := 0; i < 3; i++ {
		r.Release(b)
		if ws[i].Outcome() != Granted {
			t.Fatalf("waiter %d: %v after release, want Granted", i, ws[i].Outcome())
		}
		b = ws[i].Backend()
	}
	if fmt.Sprint(order) != "[0 1 2]" {
		t.Fatalf("grant order %v, want FIFO", order)
	}
	if r.Held() != 0 || r.InFlight() != 1 {
		t.Fatalf("held %d inFlight %d, want 0 and 1", r.Held(), r.InFlight())
	}
}

func TestQueueFullAndTimeout(t *testing.T) {
	tab := NewTable(time.Minute, 10)
	var pokes atomic.Int32
	tab.SetOnPoke(func(string) { pokes.Add(1) })
	tab.Apply(update("ns/a", 1, time.Millisecond))
	r := tab.Lookup("ns/a")
	done := make(chan Outcome, 1)
	w, err := r.Hold(func(w *Waiter) { done <- w.Outcome() })
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Hold(func(*Waiter) {}); !errors.Is(err, ErrQueueFull) {
		// The first may already have timed out on a slow machine; only then
		// is a second admitted.
		if w.Outcome() == Waiting {
			t.Fatalf("second hold past depth 1: %v, want ErrQueueFull", err)
		}
	}
	if got := <-done; got != TimedOut {
		t.Fatalf("outcome %v, want TimedOut", got)
	}
	if pokes.Load() < 1 {
		t.Fatal("no poke for a request held at zero")
	}
}

func TestApplyGrantsHeld(t *testing.T) {
	tab := NewTable(time.Minute, 10)
	r := tab.Revision("ns/a")
	got := make(chan string, 1)
	if _, err := r.Hold(func(w *Waiter) { got <- w.Backend().Addr }); err != nil {
		t.Fatal(err)
	}
	tab.Apply(update("ns/a", 10, time.Minute, BackendUpdate{Addr: "127.0.0.1:7", Slots: 1}))
	if a := <-got; a != "127.0.0.1:7" {
		t.Fatalf("granted %q", a)
	}
}

func TestCancelFreesQueueSpot(t *testing.T) {
	tab := NewTable(time.Minute, 1)
	r := tab.Revision("ns/a")
	w, err := r.Hold(func(*Waiter) { t.Error("canceled waiter notified") })
	if err != nil {
		t.Fatal(err)
	}
	if b, waiting := w.Cancel(); b != nil || !waiting {
		t.Fatal("cancel of a waiting request returned a backend")
	}
	if r.Held() != 0 {
		t.Fatalf("held %d after cancel", r.Held())
	}
	if _, err := r.Hold(func(*Waiter) {}); err != nil {
		t.Fatalf("queue spot not freed: %v", err)
	}
}

// TestConcurrencyNeverExceeded runs a burst through Acquire, Hold and
// Release from many goroutines while updates change the backends, and
// checks that no backend ever has more requests than its slots (run with
// -race).
func TestConcurrencyNeverExceeded(t *testing.T) {
	tab := NewTable(time.Minute, 100_000)
	backends := []BackendUpdate{{Addr: "127.0.0.1:1", Slots: 2}, {Addr: "127.0.0.1:2", Slots: 3}}
	tab.Apply(update("ns/a", 100_000, time.Minute, backends...))
	r := tab.Lookup("ns/a")
	var max [2]atomic.Int32
	var active [2]atomic.Int32
	idx := map[string]int{"127.0.0.1:1": 0, "127.0.0.1:2": 1}
	use := func(b *Backend) {
		i := idx[b.Addr]
		n := active[i].Add(1)
		for {
			m := max[i].Load()
			if n <= m || max[i].CompareAndSwap(m, n) {
				break
			}
		}
		active[i].Add(-1)
		r.Release(b)
	}
	const n = 2000
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			if b := r.Acquire(); b != nil {
				use(b)
				wg.Done()
				return
			}
			w, err := r.Hold(func(w *Waiter) {
				if w.Outcome() != Granted {
					t.Errorf("outcome %v", w.Outcome())
					wg.Done()
					return
				}
				go func() { use(w.Backend()); wg.Done() }()
			})
			if err != nil {
				t.Error(err)
				wg.Done()
				return
			}
			if w.Outcome() == Granted && w.notify != nil && w.deadline.IsZero() {
				use(w.Backend())
				wg.Done()
			}
		}()
	}
	for i := 0; i < 20; i++ {
		tab.Apply(update("ns/a", 100_000, time.Minute, backends...))
	}
	wg.Wait()
	if max[0].Load() > 2 || max[1].Load() > 3 {
		t.Fatalf("slots exceeded: max in flight %d and %d, limits 2 and 3", max[0].Load(), max[1].Load())
	}
	if r.Held() != 0 || r.InFlight() != 0 {
		t.Fatalf("held %d inFlight %d after the burst", r.Held(), r.InFlight())
	}
}

func TestAcquireDoesNotAllocate(t *testing.T) {
	tab := NewTable(time.Minute, 10)
	tab.Apply(update("ns/a", 10, time.Minute, BackendUpdate{Addr: "127.0.0.1:1", Slots: 4}, BackendUpdate{Addr: "127.0.0.1:2", Slots: 4}))
	r := tab.Lookup("ns/a")
	allocs := testing.AllocsPerRun(1000, func() {
		b := r.Acquire()
		r.Release(b)
	})
	if allocs != 0 {
		t.Fatalf("Acquire+Release allocates %.1f times", allocs)
	}
}

func BenchmarkAcquireRelease(b *testing.B) {
	tab := NewTable(time.Minute, 10)
	tab.Apply(update("ns/a", 10, time.Minute, BackendUpdate{Addr: "127.0.0.1:1", Slots: 0}, BackendUpdate{Addr: "127.0.0.1:2", Slots: 0}))
	r := tab.Lookup("ns/a")
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			r.Release(r.Acquire())
		}
	})
}

// TestRemovedBackendKeepsCount: a backend removed while a request is in
// flight on it and then re-added keeps its in-flight count, so its slots
// are not oversubscribed.
func TestRemovedBackendKeepsCount(t *testing.T) {
	tab := NewTable(time.Minute, 10)
	one := BackendUpdate{Addr: "127.0.0.1:1", Slots: 1}
	tab.Apply(update("ns/a", 10, time.Minute, one))
	r := tab.Lookup("ns/a")
	b := r.Acquire()
	if b == nil {
		t.Fatal("no slot")
	}
	tab.Apply(update("ns/a", 10, time.Minute))
	tab.Apply(update("ns/a", 10, time.Minute, one))
	if got := r.Acquire(); got != nil {
		t.Fatalf("re-added backend granted a second slot (in flight %d, slots 1)", got.InFlight())
	}
	r.Release(b)
	if r.Acquire() == nil {
		t.Fatal("slot not free after release")
	}
}

// BenchmarkHoldGrant is the Go side of one held request: queued behind a
// full backend, granted when the slot frees, then its slot freed.
func BenchmarkHoldGrant(b *testing.B) {
	tab := NewTable(time.Minute, 10)
	tab.Apply(update("ns/a", 10, time.Minute, BackendUpdate{Addr: "127.0.0.1:1", Slots: 1}))
	r := tab.Lookup("ns/a")
	held := r.Acquire()
	notify := func(*Waiter) {}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		w, err := r.Hold(notify)
		if err != nil {
			b.Fatal(err)
		}
		r.Release(held)
		held = w.Take()
	}
}
