package state

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestRemovedAndReAddedBackendNeverOversubscribed is the restart of thaw
// seen by the module: an update that lists none of a revision's backends
// (a restarted thaw before Envoy's new xDS stream ACKed) followed by one
// that lists them again, while requests keep taking and freeing slots on
// worker threads without a lock. Requests per address (counted after
// Acquire and before Release, so never above what the state handed out)
// must never exceed the address's slots.
func TestRemovedAndReAddedBackendNeverOversubscribed(t *testing.T) {
	const slots = 2
	addrs := []string{"127.0.0.1:1", "127.0.0.1:2"}
	full := update("ns/a", 1000, time.Minute,
		BackendUpdate{Addr: addrs[0], Slots: slots}, BackendUpdate{Addr: addrs[1], Slots: slots})
	empty := update("ns/a", 1000, time.Minute)
	tab := NewTable(time.Minute, 1000)
	tab.Apply(full)
	r := tab.Lookup("ns/a")

	var (
		perAddr    = map[string]*atomic.Int32{addrs[0]: {}, addrs[1]: {}}
		worst      atomic.Int32
		acquired   atomic.Int64
		stop       atomic.Bool
		wg         sync.WaitGroup
		workers    = 8
		iterations = 20_000
	)
	if raceEnabled {
		iterations = 5_000
	}
	for i := 0; i < workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; n < iterations && !stop.Load(); n++ {
				b := r.Acquire()
				if b == nil {
					runtime.Gosched()
					continue
				}
				acquired.Add(1)
				c := perAddr[b.Addr].Add(1)
				for {
					w := worst.Load()
					if c <= w || worst.CompareAndSwap(w, c) {
						break
					}
				}
				runtime.Gosched()
				perAddr[b.Addr].Add(-1)
				r.Release(b)
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	updates := 0
	for running := true; running; updates++ {
		if updates%2 == 0 {
			tab.Apply(empty)
		} else {
			tab.Apply(full)
		}
		runtime.Gosched()
		select {
		case <-done:
			running = false
		default:
		}
		if updates > 1_000_000 {
			stop.Store(true)
		}
	}
	wg.Wait()
	if w := worst.Load(); w > slots {
		t.Errorf("an address had %d requests in flight at once, its slots are %d (%d updates, %d acquired)", w, slots, updates, acquired.Load())
	}
	if acquired.Load() == 0 {
		t.Fatal("no slot was ever acquired")
	}
	if r.InFlight() != 0 {
		t.Errorf("revision in flight after every request ended = %d, want 0", r.InFlight())
	}
	for _, a := range addrs {
		if n := perAddr[a].Load(); n != 0 {
			t.Errorf("%s: %d counted after every request ended", a, n)
		}
	}
	t.Logf("%d updates, %d slots acquired, worst %d in flight per address (slots %d)", updates, acquired.Load(), worst.Load(), slots)
}

// TestRemoveReAddInterleavings replays, step by step, the interleavings
// of a thaw restart on one address with 2 slots: "stale" is a request
// that loaded the backend list before an update and takes its slot after
// it (Acquire is a load of the list, then a compare-and-swap), "empty"
// the restarted thaw's first update, "full" the one that lists the
// address again. After every step the requests on the address never
// exceed its slots, and when they all end the slots are whole again.
func TestRemoveReAddInterleavings(t *testing.T) {
	const addr, slots = "127.0.0.1:1", 2
	for _, tc := range []struct {
		name  string
		steps []string
	}{
		{"stale take after a drop at 0 in flight", []string{"load", "empty", "stale", "full", "acquire", "acquire", "acquire"}},
		{"stale take after a drop, then released before re-add", []string{"load", "empty", "stale", "release", "full", "acquire", "acquire", "acquire"}},
		{"dropped with 1 in flight, stale take on the dropped one", []string{"acquire", "load", "empty", "stale", "full", "acquire", "acquire"}},
		{"dropped full, two empty updates, re-added", []string{"acquire", "acquire", "empty", "empty", "full", "acquire", "release", "acquire", "acquire"}},
		{"no share here, then a share again", []string{"acquire", "noshare", "acquire", "full", "acquire", "acquire"}},
		{"re-added with fewer slots than in flight", []string{"acquire", "acquire", "empty", "one", "acquire", "release", "acquire", "release", "acquire"}},
		{"drained between updates, re-added fresh", []string{"acquire", "empty", "release", "empty", "full", "acquire", "acquire", "acquire"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tab := NewTable(time.Minute, 10)
			apply := func(bs ...BackendUpdate) { tab.Apply(update("ns/a", 10, time.Minute, bs...)) }
			apply(BackendUpdate{Addr: addr, Slots: slots})
			r := tab.Lookup("ns/a")
			var stale []*Backend
			var running []*Backend
			limit := int32(slots)
			for i, st := range tc.steps {
				before := int32(len(running))
				switch st {
				case "load":
					stale = *r.backends.Load()
				case "stale":
					if b := pick(stale); b != nil {
						r.inFlight.Add(1) // what Acquire does after its pick
						running = append(running, b)
					}
				case "acquire":
					if b := r.Acquire(); b != nil {
						running = append(running, b)
					}
				case "release":
					if len(running) == 0 {
						continue // the stale take it would end was refused
					}
					r.Release(running[0])
					running = running[1:]
				case "empty":
					apply()
				case "noshare":
					apply(BackendUpdate{Addr: addr, Slots: -1})
				case "full":
					apply(BackendUpdate{Addr: addr, Slots: slots})
					limit = slots
				case "one":
					apply(BackendUpdate{Addr: addr, Slots: 1})
					limit = 1
				default:
					t.Fatalf("unknown step %q", st)
				}
				// A take is refused at the limit (a lower limit than the
				// requests running lets them end, and takes nothing).
				if n := int32(len(running)); n > before && n > limit {
					t.Fatalf("after step %d (%s): %d requests on %s, slots %d", i, st, n, addr, limit)
				}
			}
			for _, b := range running {
				r.Release(b)
			}
			if r.InFlight() != 0 {
				t.Fatalf("revision in flight %d after every request ended", r.InFlight())
			}
			var got []*Backend
			for b := r.Acquire(); b != nil && len(got) <= 10; b = r.Acquire() {
				got = append(got, b)
			}
			if int32(len(got)) != limit {
				t.Fatalf("%d slots free after every request ended, want %d", len(got), limit)
			}
		})
	}
}
