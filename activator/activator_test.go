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

func TestPokeOnFirstHeldRequest(t *testing.T) {
	bubble(t, func(t *testing.T) {
		e := newEnv(t, Options{})
		e.upsert(demo, 0, time.Minute, 100)
		synctest.Wait()
		for i := 0; i < 20; i++ {
			e.acquireAsync(context.Background(), demo)
		}
		synctest.Wait()
		if n := e.poker.count(); n != 1 {
			t.Fatalf("pokes after 20 held requests = %d, want 1", n)
		}
		time.Sleep(DefaultReportInterval)
		e.acquireAsync(context.Background(), demo)
		synctest.Wait()
		if n := e.poker.count(); n != 2 {
			t.Fatalf("pokes one report interval later = %d, want 2 (repeat while still cold)", n)
		}
		e.backends(demo, "127.0.0.1")
		synctest.Wait()
		_, rel := mustAcquire(t, e.act, demo)
		rel()
		if n := e.poker.count(); n != 2 {
			t.Fatalf("pokes after a warm request = %d, want still 2", n)
		}
	})
}

func TestReportsSamples(t *testing.T) {
	bubble(t, func(t *testing.T) {
		e := newEnv(t, Options{})
		e.upsert(demo, 1, time.Minute, 100)
		e.backends(demo, "127.0.0.1")
		synctest.Wait()
		_, rel := mustAcquire(t, e.act, demo)
		e.acquireAsync(context.Background(), demo) // held
		e.acquireAsync(context.Background(), demo) // held
		time.Sleep(DefaultReportInterval)
		synctest.Wait()
		s := e.rec.all()
		if len(s) != 1 {
			t.Fatalf("samples after one interval = %+v, want 1", s)
		}
		if s[0].Revision != demo || s[0].Source != SampleSource || s[0].Concurrency != 3 || s[0].Requests != 3 {
			t.Fatalf("sample = %+v, want demo/activator concurrency 3 (1 in flight + 2 held), 3 requests", s[0])
		}
		rel()
		time.Sleep(DefaultReportInterval)
		synctest.Wait()
		if s := e.rec.all(); len(s) != 2 || s[1].Concurrency != 2 || s[1].Requests != 0 {
			t.Fatalf("second sample = %+v, want concurrency 2, requests 0", s[len(s)-1])
		}
	})
}

// Idle revisions are reported once with zero, then skipped.
func TestReportsSkipIdle(t *testing.T) {
	bubble(t, func(t *testing.T) {
		e := newEnv(t, Options{})
		e.upsert(demo, 0, time.Minute, 100)
		e.backends(demo, "127.0.0.1")
		synctest.Wait()
		_, rel := mustAcquire(t, e.act, demo)
		rel()
		time.Sleep(5 * DefaultReportInterval)
		synctest.Wait()
		s := e.rec.all()
		if len(s) != 2 || s[0].Requests != 1 || s[1].Requests != 0 || s[1].Concurrency != 0 {
			t.Fatalf("samples = %+v, want one with 1 request then one zero", s)
		}
	})
}

func TestShutdown(t *testing.T) {
	bubble(t, func(t *testing.T) {
		e := newEnv(t, Options{})
		e.upsert(demo, 1, time.Minute, 100)
		e.backends(demo, "127.0.0.1")
		synctest.Wait()
		_, rel := mustAcquire(t, e.act, demo)
		served := e.acquireAsync(context.Background(), demo)
		synctest.Wait() // served queues first
		aborted := e.acquireAsync(context.Background(), demo)
		synctest.Wait()

		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		shut := make(chan error, 1)
		go func() { shut <- e.act.Shutdown(ctx) }()
		synctest.Wait()
		_, _, err := e.act.Acquire(context.Background(), demo)
		wantErr(t, err, ErrShuttingDown)

		rel() // a held request still gets a freed slot during the drain
		r := <-served
		if r.err != nil {
			t.Fatalf("held request during drain: %v, want a pod", r.err)
		}
		synctest.Wait()
		select {
		case err := <-shut:
			t.Fatalf("Shutdown returned %v while a request was still held", err)
		default:
		}
		wantErr(t, (<-aborted).err, ErrShuttingDown)
		if got := time.Since(start); got != 10*time.Second {
			t.Fatalf("second held request aborted after %v, want at the 10s deadline", got)
		}
		if err := <-shut; !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Shutdown = %v, want deadline exceeded after aborting", err)
		}
		r.release()
		if err := e.act.Shutdown(context.Background()); err != nil {
			t.Fatalf("second Shutdown with nothing held = %v, want nil", err)
		}
	})
}

// Held requests of a revision without backends get ErrShuttingDown exactly
// at the shutdown deadline.
func TestShutdownAbortsHeldAtDeadline(t *testing.T) {
	bubble(t, func(t *testing.T) {
		e := newEnv(t, Options{})
		e.upsert(demo, 0, time.Minute, 100)
		synctest.Wait()
		chs := []<-chan result{e.acquireAsync(context.Background(), demo), e.acquireAsync(context.Background(), demo)}
		synctest.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		start := time.Now()
		err := e.act.Shutdown(ctx)
		if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, ErrShuttingDown) {
			t.Fatalf("Shutdown = %v, want deadline exceeded", err)
		}
		if got := time.Since(start); got != 3*time.Second {
			t.Fatalf("Shutdown took %v, want the 3s deadline", got)
		}
		for _, ch := range chs {
			wantErr(t, (<-ch).err, ErrShuttingDown)
		}
	})
}

func TestShutdownWithNothingHeld(t *testing.T) {
	bubble(t, func(t *testing.T) {
		e := newEnv(t, Options{})
		if err := e.act.Shutdown(context.Background()); err != nil {
			t.Fatalf("Shutdown = %v, want nil", err)
		}
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
