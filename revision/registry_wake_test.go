package revision

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"k8s.io/utils/clock"
)

// A revision's first ready backend skips the holdoff when the last
// publication is at least a holdoff old, and otherwise goes out a holdoff
// after the last publication; other changes wait for the batch.
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
		// a's second ready backend: not a first, batched.
		quiet()
		r.SetBackends(a, []Backend{ready(1), ready(3)})
		synctest.Wait()
		if readyOf(a) != 1 {
			t.Fatal("a's second backend published inside the holdoff")
		}
		time.Sleep(holdoff) // published now, by Run
		synctest.Wait()
		if readyOf(a) != 2 {
			t.Fatal("a's second backend not published after the holdoff")
		}
		// b's first ready backend half a holdoff after that publication:
		// published a holdoff after the publication, not a holdoff after
		// the change (Run's batch).
		time.Sleep(holdoff / 2)
		r.SetBackends(b, []Backend{ready(2)})
		time.Sleep(holdoff/2 - time.Millisecond)
		synctest.Wait()
		if readyOf(b) != 0 {
			t.Fatal("b published before a holdoff since the last publication")
		}
		time.Sleep(time.Millisecond)
		synctest.Wait()
		if readyOf(b) != 1 {
			t.Fatal("b not published a holdoff after the last publication")
		}
		time.Sleep(holdoff) // Run's batch: nothing left
		synctest.Wait()
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
