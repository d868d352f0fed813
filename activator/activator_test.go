package activator

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/thaw-dev/thaw/revision"
)

func TestAcquireUnknownRevision(t *testing.T) {
	bubble(t, func(t *testing.T) {
		e := newEnv(t, Options{})
		e.upsert(demo, 0, time.Minute, 10)
		synctest.Wait()
		_, _, err := e.act.Acquire(context.Background(), revision.Key{Namespace: "default", Name: "other"})
		wantErr(t, err, ErrUnknownRevision)
	})
}

// Before the first synced snapshot an unknown revision is waited for: it
// may just not be listed yet.
func TestAcquireWaitsForSync(t *testing.T) {
	bubble(t, func(t *testing.T) {
		e := newEnv(t, Options{})
		ch := e.acquireAsync(context.Background(), demo)
		synctest.Wait()
		if _, done := poll(ch); done {
			t.Fatal("Acquire returned before the registry synced")
		}
		e.upsert(demo, 0, time.Minute, 10) // also SetSynced
		e.backends(demo, "127.0.0.1")
		synctest.Wait()
		r := <-ch
		if r.err != nil || r.pod.Address != "127.0.0.1:8080" {
			t.Fatalf("Acquire = %+v, %v; want 127.0.0.1:8080", r.pod, r.err)
		}
		r.release()
	})
}

func TestAcquireFastPathAndRelease(t *testing.T) {
	bubble(t, func(t *testing.T) {
		e := newEnv(t, Options{})
		e.upsert(demo, 1, time.Minute, 10)
		e.backends(demo, "127.0.0.1", "127.0.0.2")
		synctest.Wait()
		p1, rel1 := mustAcquire(t, e.act, demo)
		p2, rel2 := mustAcquire(t, e.act, demo)
		if p1.Address == p2.Address {
			t.Fatalf("both requests went to %s with container concurrency 1", p1.Address)
		}
		if held, inFlight := e.act.Stats(demo); held != 0 || inFlight != 2 {
			t.Fatalf("Stats = %d held, %d in flight; want 0, 2", held, inFlight)
		}
		rel1()
		rel1() // a second call must not free a second slot
		if _, inFlight := e.act.Stats(demo); inFlight != 1 {
			t.Fatalf("in flight after release = %d, want 1", inFlight)
		}
		p3, rel3 := mustAcquire(t, e.act, demo)
		if p3.Address != p1.Address {
			t.Fatalf("third request went to %s, want the freed %s", p3.Address, p1.Address)
		}
		ch := e.acquireAsync(context.Background(), demo) // both pods full now
		synctest.Wait()
		if _, done := poll(ch); done {
			t.Fatal("request was not held while every pod was at container concurrency")
		}
		rel2()
		synctest.Wait()
		r, done := poll(ch)
		if !done || r.err != nil || r.pod.Address != p2.Address {
			t.Fatalf("held request after release: done=%v %+v %v, want %s", done, r.pod, r.err, p2.Address)
		}
		r.release()
		rel3()
		if _, inFlight := e.act.Stats(demo); inFlight != 0 {
			t.Fatalf("in flight at the end = %d, want 0", inFlight)
		}
	})
}

func TestHoldTimeout(t *testing.T) {
	bubble(t, func(t *testing.T) {
		e := newEnv(t, Options{})
		e.upsert(demo, 0, 5*time.Second, 10)
		synctest.Wait()
		start := time.Now()
		_, _, err := e.act.Acquire(context.Background(), demo)
		wantErr(t, err, ErrHoldTimeout)
		if got := time.Since(start); got != 5*time.Second {
			t.Fatalf("held for %v, want the hold timeout 5s", got)
		}
		if held, _ := e.act.Stats(demo); held != 0 {
			t.Fatalf("held after timeout = %d, want 0", held)
		}
	})
}

func TestHoldEndsWithContext(t *testing.T) {
	bubble(t, func(t *testing.T) {
		e := newEnv(t, Options{})
		e.upsert(demo, 0, time.Minute, 10)
		synctest.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, _, err := e.act.Acquire(ctx, demo)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v, want context.DeadlineExceeded", err)
		}
	})
}

func TestQueueFull(t *testing.T) {
	bubble(t, func(t *testing.T) {
		e := newEnv(t, Options{})
		e.upsert(demo, 0, time.Minute, 3)
		synctest.Wait()
		var chs []<-chan result
		for i := 0; i < 3; i++ {
			chs = append(chs, e.acquireAsync(context.Background(), demo))
		}
		synctest.Wait()
		if held, _ := e.act.Stats(demo); held != 3 {
			t.Fatalf("held = %d, want 3", held)
		}
		_, _, err := e.act.Acquire(context.Background(), demo)
		wantErr(t, err, ErrQueueFull)
		e.backends(demo, "127.0.0.1")
		for i, ch := range chs {
			r := <-ch
			if r.err != nil {
				t.Fatalf("held request %d: %v", i, r.err)
			}
			r.release()
		}
	})
}

// Held requests are served in arrival order when capacity frees one slot
// at a time.
func TestHeldRequestsFIFO(t *testing.T) {
	bubble(t, func(t *testing.T) {
		e := newEnv(t, Options{})
		e.upsert(demo, 1, time.Minute, 10)
		e.backends(demo, "127.0.0.1")
		synctest.Wait()
		_, rel := mustAcquire(t, e.act, demo)
		var chs []<-chan result
		for i := 0; i < 4; i++ {
			chs = append(chs, e.acquireAsync(context.Background(), demo))
			synctest.Wait() // fix the arrival order
		}
		for i, ch := range chs {
			rel()
			synctest.Wait()
			for j := i + 1; j < len(chs); j++ {
				if _, done := poll(chs[j]); done {
					t.Fatalf("request %d served before request %d", j, i)
				}
			}
			r := <-ch
			if r.err != nil {
				t.Fatalf("request %d: %v", i, r.err)
			}
			rel = r.release
		}
		rel()
	})
}

func TestRevisionRemovedWhileHeld(t *testing.T) {
	bubble(t, func(t *testing.T) {
		e := newEnv(t, Options{})
		e.upsert(demo, 0, time.Minute, 10)
		synctest.Wait()
		ch := e.acquireAsync(context.Background(), demo)
		synctest.Wait()
		e.reg.Delete(demo)
		wantErr(t, (<-ch).err, ErrUnknownRevision)
	})
}

func TestWaitIdle(t *testing.T) {
	bubble(t, func(t *testing.T) {
		e := newEnv(t, Options{})
		e.upsert(demo, 0, time.Minute, 100)
		e.backends(demo, "127.0.0.1", "127.0.0.2")
		synctest.Wait()
		var rels []func()
		for i := 0; i < 4; i++ {
			_, rel := mustAcquire(t, e.act, demo)
			rels = append(rels, rel)
		}
		done := make(chan error, 1)
		go func() { done <- e.act.WaitIdle(context.Background(), demo, "127.0.0.1:8080") }()
		synctest.Wait()
		select {
		case err := <-done:
			t.Fatalf("WaitIdle returned %v while the backend was still offered", err)
		default:
		}
		e.backends(demo, "127.0.0.2") // the platform removes it first
		synctest.Wait()
		for i, rel := range rels {
			select {
			case err := <-done:
				t.Fatalf("WaitIdle returned %v with %d of 4 requests released", err, i)
			default:
			}
			rel()
			synctest.Wait()
		}
		if err := <-done; err != nil {
			t.Fatalf("WaitIdle = %v", err)
		}
		if err := e.act.WaitIdle(context.Background(), demo, "10.9.9.9:1"); err != nil {
			t.Fatalf("WaitIdle of an unknown backend = %v, want nil", err)
		}
	})
}

// Container concurrency and hold timeout changes apply to new requests
// without touching the counts of requests in flight.
func TestLimitsUpdate(t *testing.T) {
	bubble(t, func(t *testing.T) {
		e := newEnv(t, Options{})
		e.upsert(demo, 2, time.Minute, 100)
		e.backends(demo, "127.0.0.1")
		synctest.Wait()
		_, r1 := mustAcquire(t, e.act, demo)
		_, r2 := mustAcquire(t, e.act, demo)
		e.upsert(demo, 3, time.Minute, 100)
		synctest.Wait()
		_, r3 := mustAcquire(t, e.act, demo)
		ch := e.acquireAsync(context.Background(), demo)
		synctest.Wait()
		if _, done := poll(ch); done {
			t.Fatal("fourth request not held with container concurrency 3")
		}
		e.upsert(demo, 1, time.Minute, 100) // lower: 3 in flight stay, nothing new
		synctest.Wait()
		r1()
		r2()
		synctest.Wait()
		if _, done := poll(ch); done {
			t.Fatal("held request admitted while 1 was in flight with container concurrency 1")
		}
		r3()
		r := <-ch
		if r.err != nil {
			t.Fatal(r.err)
		}
		r.release()
	})
}

func TestManyRevisionsIndependent(t *testing.T) {
	bubble(t, func(t *testing.T) {
		e := newEnv(t, Options{})
		for i := 0; i < 5; i++ {
			k := revision.Key{Namespace: "ns", Name: fmt.Sprintf("r%d", i)}
			e.upsert(k, 1, time.Minute, 1)
			e.backends(k, fmt.Sprintf("127.0.0.%d", i+1))
		}
		synctest.Wait()
		for i := 0; i < 5; i++ {
			k := revision.Key{Namespace: "ns", Name: fmt.Sprintf("r%d", i)}
			p, _ := mustAcquire(t, e.act, k)
			if want := fmt.Sprintf("127.0.0.%d:8080", i+1); p.Address != want {
				t.Fatalf("%s got %s, want %s", k, p.Address, want)
			}
		}
	})
}

// A deleted revision's backend is still waited for while requests the
// activator sent it are in flight.
func TestWaitIdleAfterRevisionDeleted(t *testing.T) {
	bubble(t, func(t *testing.T) {
		e := newEnv(t, Options{})
		e.upsert(demo, 0, time.Minute, 100)
		e.backends(demo, "127.0.0.1")
		synctest.Wait()
		_, rel := mustAcquire(t, e.act, demo)
		e.reg.Delete(demo)
		synctest.Wait()
		done := make(chan error, 1)
		go func() { done <- e.act.WaitIdle(context.Background(), demo, "127.0.0.1:8080") }()
		synctest.Wait()
		select {
		case err := <-done:
			t.Fatalf("WaitIdle returned %v with a request still in flight", err)
		default:
		}
		rel()
		if err := <-done; err != nil {
			t.Fatalf("WaitIdle = %v", err)
		}
		e.upsert(revision.Key{Namespace: "x", Name: "y"}, 0, time.Minute, 1) // prunes the idle removed throttler
		synctest.Wait()
		if n := len(*e.act.removed.Load()); n != 0 {
			t.Fatalf("%d removed throttlers kept after their requests ended, want 0", n)
		}
	})
}

// MaxHold caps the revision's hold timeout (the ext_proc server's budget),
// and OnHold runs only for a request that waits.
func TestAcquireWithMaxHold(t *testing.T) {
	bubble(t, func(t *testing.T) {
		e := newEnv(t, Options{})
		e.upsert(demo, 0, time.Minute, 10)
		synctest.Wait()
		start := time.Now()
		holds := 0
		_, _, err := e.act.AcquireWith(context.Background(), demo, AcquireOptions{OnHold: func() { holds++ }, MaxHold: 3 * time.Second})
		wantErr(t, err, ErrHoldTimeout)
		if got := time.Since(start); got != 3*time.Second {
			t.Fatalf("held for %v, want MaxHold 3s", got)
		}
		if holds != 1 {
			t.Fatalf("OnHold called %d times, want 1", holds)
		}
		e.backends(demo, "10.0.0.1")
		synctest.Wait()
		pod, release, err := e.act.AcquireWith(context.Background(), demo, AcquireOptions{OnHold: func() { holds++ }, MaxHold: time.Second})
		if err != nil || holds != 1 {
			t.Fatalf("fast path: %v, OnHold calls %d; want nil, 1", err, holds)
		}
		release()
		release() // a second call does nothing
		if _, inFlight := e.act.Stats(demo); inFlight != 0 || pod.Tracked {
			t.Fatalf("in flight %d, Tracked %v; want 0, false (container concurrency 0)", inFlight, pod.Tracked)
		}
	})
}

// Pod.Tracked says whether the slot must be held until the request ends.
func TestPodTrackedWithContainerConcurrency(t *testing.T) {
	bubble(t, func(t *testing.T) {
		e := newEnv(t, Options{})
		e.upsert(demo, 2, time.Minute, 10)
		e.backends(demo, "10.0.0.1")
		synctest.Wait()
		pod, release := mustAcquire(t, e.act, demo)
		defer release()
		if !pod.Tracked {
			t.Fatal("Tracked = false with container concurrency 2, want true")
		}
	})
}
