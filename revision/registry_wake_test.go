package revision

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"k8s.io/utils/clock"
)

// A revision's first ready backend skips the holdoff when the last
// publication is at least a holdoff old; other changes, and a first
// backend right after a publication, wait for the batch.
func TestRegistryFirstReadyBackendSkipsHoldoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const holdoff = 100 * time.Millisecond
		r := NewRegistry(RegistryOptions{Clock: clock.RealClock{}, Holdoff: holdoff})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go r.Run(ctx)
		a, b, c := Key{"ns", "a"}, Key{"ns", "b"}, Key{"ns", "c"}
		for _, k := range []Key{a, b, c} {
			r.Upsert(k, validSpec())
		}
		r.SetSynced()
		time.Sleep(holdoff)
		synctest.Wait()
		if v := r.Snapshot().Version; v != 1 {
			t.Fatalf("version %d after the first holdoff, want 1", v)
		}
		ready := func(port int32) Backend { return Backend{Address: "127.0.0.1", Port: port, Ready: true} }
		readyOf := func(k Key) int {
			rev := r.Snapshot().Get(k)
			if rev == nil {
				t.Fatalf("%v missing", k)
			}
			return ReadyCount(rev.Backends)
		}

		// quiet lets any holdoff under way end, and then as long again:
		// the next change finds no publication within a holdoff.
		quiet := func() {
			time.Sleep(holdoff)
			synctest.Wait()
			time.Sleep(holdoff)
		}

		// Not ready yet: batched.
		quiet()
		r.SetBackends(a, []Backend{{Address: "127.0.0.1", Port: 1}})
		synctest.Wait()
		if v := r.Snapshot().Version; v != 1 {
			t.Fatalf("an unready backend published at once (version %d)", v)
		}
		time.Sleep(holdoff)
		synctest.Wait()
		if v := r.Snapshot().Version; v != 2 {
			t.Fatalf("version %d after the holdoff, want 2", v)
		}

		// The first ready backend, a holdoff after the last publication:
		// published by the setter itself.
		quiet()
		r.SetBackends(a, []Backend{ready(1)})
		if n := readyOf(a); n != 1 {
			t.Fatalf("first ready backend not published at once: %d ready", n)
		}
		// b's first ready backend right after that publication: batched.
		r.SetBackends(b, []Backend{ready(2)})
		// a's second ready backend: not a first, batched.
		r.SetBackends(a, []Backend{ready(1), ready(3)})
		synctest.Wait()
		if readyOf(b) != 0 || readyOf(a) != 1 {
			t.Fatalf("published inside the holdoff: b %d ready, a %d ready", readyOf(b), readyOf(a))
		}
		time.Sleep(holdoff)
		synctest.Wait()
		if readyOf(b) != 1 || readyOf(a) != 2 {
			t.Fatalf("after the holdoff: b %d ready, a %d ready, want 1 and 2", readyOf(b), readyOf(a))
		}
		v := r.Snapshot().Version

		// Back to no ready backend and ready again: a first once more.
		quiet()
		r.SetBackends(c, []Backend{ready(4)})
		if readyOf(c) != 1 {
			t.Fatal("c's first ready backend not published at once")
		}
		quiet()
		r.SetBackends(c, nil)
		synctest.Wait()
		if readyOf(c) != 1 {
			t.Fatal("losing the last backend published at once")
		}
		quiet()
		r.SetBackends(c, []Backend{ready(5)})
		if readyOf(c) != 1 || r.Snapshot().Get(c).Backends[0].Port != 5 {
			t.Fatalf("c's new first backend not published at once: %+v", r.Snapshot().Get(c).Backends)
		}
		if got := r.Snapshot().Version; got != v+3 {
			t.Fatalf("version %d, want %d (one snapshot per step)", got, v+3)
		}
	})
}
