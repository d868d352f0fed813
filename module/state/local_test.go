package state

import (
	"sync"
	"testing"
	"time"
)

// TestReleaseOnPrefersLocalWorker: a slot freed on a worker goes to the
// oldest request held on that worker when one waits within LocalWindow
// of the head, else (or with NoWorker) to the oldest held request; a
// request waiting for an update is never overtaken.
func TestReleaseOnPrefersLocalWorker(t *testing.T) {
	type hold struct {
		worker    int32
		forUpdate bool
	}
	for _, tc := range []struct {
		name    string
		holds   []hold
		release int32
		want    int // index in holds of the request granted
	}{
		{"head on the releasing worker", []hold{{worker: 1}, {worker: 0}}, 1, 0},
		{"younger request on the releasing worker", []hold{{worker: 0}, {worker: 0}, {worker: 1}}, 1, 2},
		{"none on the releasing worker: FIFO", []hold{{worker: 0}, {worker: 2}}, 1, 0},
		{"no worker: FIFO", []hold{{worker: 0}, {worker: 1}}, NoWorker, 0},
		{"beyond the window: FIFO", append(repeatHold(hold{worker: 0}, LocalWindow), hold{worker: 1}), 1, 0},
		{"last place in the window", append(repeatHold(hold{worker: 0}, LocalWindow-1), hold{worker: 1}), 1, LocalWindow - 1},
		{"never past a request waiting for an update", []hold{{worker: 0, forUpdate: true}, {worker: 1}}, 1, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tab := NewTable(time.Minute, 100)
			tab.Apply(update("ns/a", 100, time.Minute, BackendUpdate{Addr: "127.0.0.1:1", Slots: 1}))
			r := tab.Lookup("ns/a")
			b := r.Acquire()
			ws := make([]*Waiter, len(tc.holds))
			for i, h := range tc.holds {
				var err error
				if h.forUpdate {
					ws[i], err = r.HoldForUpdateNotify(&countNotifier{})
				} else {
					ws[i], err = r.HoldNotifyOn(&countNotifier{}, h.worker)
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			r.ReleaseOn(b, tc.release)
			for i, w := range ws {
				want := Waiting
				if i == tc.want {
					want = Granted
				}
				if got := w.Outcome(); got != want {
					t.Errorf("request %d (worker %d): %v, want %v", i, tc.holds[i].worker, got, want)
				}
			}
			if got, want := r.Held(), int64(len(ws)-min(1, tc.want+1)); got != want {
				t.Errorf("held %d, want %d", got, want)
			}
			if r.InFlight() != int64(min(1, tc.want+1)) {
				t.Errorf("in flight %d", r.InFlight())
			}
		})
	}
}

func repeatHold[T any](h T, n int) []T {
	out := make([]T, n)
	for i := range out {
		out[i] = h
	}
	return out
}

// TestOvertakenAtMostMaxOvertaken: requests held on a worker that frees
// no slot are still granted, each after at most MaxOvertaken younger
// requests of the releasing worker; the order of each worker's own
// requests stays FIFO.
func TestOvertakenAtMostMaxOvertaken(t *testing.T) {
	tab := NewTable(time.Minute, 1000)
	tab.Apply(update("ns/a", 1000, time.Minute, BackendUpdate{Addr: "127.0.0.1:1", Slots: 1}))
	r := tab.Lookup("ns/a")
	b := r.Acquire()
	// Alternate: one request on worker 0, then two on worker 1, so a
	// request on worker 1 is always near the head.
	type held struct {
		w      *Waiter
		worker int32
		seq    int
	}
	var all []held
	for i := 0; i < 30; i++ {
		worker := int32(1)
		if i%3 == 0 {
			worker = 0
		}
		w, err := r.HoldNotifyOn(&countNotifier{}, worker)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, held{w, worker, i})
	}
	// Every slot is freed on worker 1.
	var order []held
	for len(order) < len(all) {
		r.ReleaseOn(b, 1)
		var next *held
		for i := range all {
			if st, got := all[i].w.Claim(); st == Granted && got != nil {
				if next != nil {
					t.Fatal("one release granted two requests")
				}
				next, b = &all[i], got
			}
		}
		if next == nil {
			t.Fatalf("a release granted nothing (%d of %d granted)", len(order), len(all))
		}
		order = append(order, *next)
	}
	last := map[int32]int{0: -1, 1: -1}
	for pos, h := range order {
		if h.seq < last[h.worker] {
			t.Fatalf("worker %d's requests out of order: %d after %d", h.worker, h.seq, last[h.worker])
		}
		last[h.worker] = h.seq
		younger := 0
		for _, o := range order[:pos] {
			if o.seq > h.seq {
				younger++
			}
		}
		if younger > MaxOvertaken {
			t.Fatalf("request %d (worker %d) granted after %d younger ones, want at most %d", h.seq, h.worker, younger, MaxOvertaken)
		}
	}
	if r.Held() != 0 || r.InFlight() != 1 {
		t.Fatalf("held %d in flight %d, want 0 and 1", r.Held(), r.InFlight())
	}
}

// TestReleaseOnConcurrent: releases and holds from several workers at
// once never put more than the slots in flight, and every held request
// is granted once (race detector).
func TestReleaseOnConcurrent(t *testing.T) {
	const slots, workers, perWorker = 4, 4, 300
	tab := NewTable(time.Minute, workers*perWorker)
	tab.Apply(update("ns/a", workers*perWorker, time.Minute, BackendUpdate{Addr: "127.0.0.1:1", Slots: slots}))
	r := tab.Lookup("ns/a")
	var wg sync.WaitGroup
	var mu sync.Mutex
	peak := int64(0)
	for wk := int32(0); wk < workers; wk++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < perWorker; i++ {
				b := r.Acquire()
				if b == nil {
					done := make(chan struct{})
					w, err := r.HoldNotifyOn(notifyChan(done), wk)
					if err != nil {
						t.Error(err)
						return
					}
					if st, got := w.Claim(); st != Granted {
						select {
						case <-done:
						case <-time.After(10 * time.Second):
							t.Error("a held request was never granted")
							return
						}
						st, got = w.Claim()
						if st != Granted {
							t.Errorf("outcome %v, want Granted", st)
							return
						}
						b = got
					} else {
						b = got
					}
				}
				mu.Lock()
				peak = max(peak, int64(b.InFlight()))
				mu.Unlock()
				r.ReleaseOn(b, wk)
			}
		}()
	}
	wg.Wait()
	if peak > slots {
		t.Fatalf("peak in flight %d, want at most %d", peak, slots)
	}
	if r.InFlight() != 0 || r.Held() != 0 {
		t.Fatalf("in flight %d held %d at the end, want 0", r.InFlight(), r.Held())
	}
}

type notifyChan chan struct{}

func (c notifyChan) Notify(*Waiter) { close(c) }
