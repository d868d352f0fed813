package activator

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/thaw-dev/thaw/revision"
)

func TestWakeFailureAnswersHeldAndNewRequests(t *testing.T) {
	bubble(t, func(t *testing.T) {
		e := newEnv(t, Options{})
		e.upsert(demo, 0, time.Minute, 10)
		synctest.Wait()
		held := e.acquireAsync(context.Background(), demo)
		synctest.Wait()
		if _, done := poll(held); done {
			t.Fatal("request not held before the failure")
		}
		start := time.Now()
		retryAt := start.Add(30 * time.Second)
		e.reg.SetWakeFailure(demo, &revision.WakeFailure{Reason: revision.WakeProcessExited, Message: "exit status 3", RetryAt: retryAt})
		synctest.Wait()
		r, done := poll(held)
		if !done {
			t.Fatal("held request still held after the wake failure")
		}
		if time.Since(start) != 0 {
			t.Fatalf("held request answered after %v, want at once", time.Since(start))
		}
		var we *WakeFailedError
		if !errors.As(r.err, &we) || !errors.Is(r.err, ErrWakeFailed) {
			t.Fatalf("err = %v, want a *WakeFailedError", r.err)
		}
		if we.Failure.Reason != revision.WakeProcessExited || we.RetryAfter != 30*time.Second || we.Key != demo {
			t.Fatalf("error = %+v, want ProcessExited, RetryAfter 30s, key %s", we, demo)
		}

		// New requests fail at once too, with the time left.
		time.Sleep(10 * time.Second)
		_, _, err := e.act.Acquire(context.Background(), demo)
		if !errors.As(err, &we) || we.RetryAfter != 20*time.Second {
			t.Fatalf("new request: err = %v, want wake failure with RetryAfter 20s", err)
		}
		if h, _ := e.act.Stats(demo); h != 0 {
			t.Fatalf("held = %d, want 0", h)
		}

		// The next attempt clears it: requests are held again and served.
		e.reg.SetWakeFailure(demo, nil)
		synctest.Wait()
		again := e.acquireAsync(context.Background(), demo)
		synctest.Wait()
		if _, done := poll(again); done {
			t.Fatal("request after the failure cleared was not held")
		}
		e.backends(demo, "10.0.0.1")
		synctest.Wait()
		r, done = poll(again)
		if !done || r.err != nil {
			t.Fatalf("after the backend: done=%v err=%v, want a pod", done, r.err)
		}
		r.release()
	})
}

func TestWakeFailureIgnoredWhileABackendServes(t *testing.T) {
	bubble(t, func(t *testing.T) {
		e := newEnv(t, Options{})
		e.upsert(demo, 1, time.Minute, 10)
		e.backends(demo, "10.0.0.1")
		synctest.Wait()
		_, rel := mustAcquire(t, e.act, demo)
		// A second pod failed to start while the first one serves: requests
		// wait for the first one's slot.
		e.reg.SetWakeFailure(demo, &revision.WakeFailure{Reason: revision.WakeImagePullBackOff})
		synctest.Wait()
		held := e.acquireAsync(context.Background(), demo)
		synctest.Wait()
		if _, done := poll(held); done {
			t.Fatal("request answered while a backend serves the revision, want held")
		}
		rel()
		synctest.Wait()
		r, done := poll(held)
		if !done || r.err != nil {
			t.Fatalf("done=%v err=%v, want the freed slot", done, r.err)
		}
		r.release()
		// The default Retry-After when the platform does not know when it
		// tries again.
		e.backends(demo)
		synctest.Wait()
		_, _, err := e.act.Acquire(context.Background(), demo)
		var we *WakeFailedError
		if !errors.As(err, &we) || we.RetryAfter != DefaultWakeRetryAfter {
			t.Fatalf("err = %v, want wake failure with RetryAfter %v", err, DefaultWakeRetryAfter)
		}
	})
}
