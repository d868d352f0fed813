package control

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/thaw-dev/thaw/activator"
	"github.com/thaw-dev/thaw/autoscaler"
	"github.com/thaw-dev/thaw/revision"
)

// TestRecordDecisionActivationTimeout: a decision whose wake-up timed out
// sets the revision's wake failure (ActivationTimeout, the timeout named),
// the following ones leave it, and one without it clears it; an unknown
// revision is ignored.
func TestRecordDecisionActivationTimeout(t *testing.T) {
	key := revision.Key{Namespace: "ns", Name: "a"}
	steps := []struct {
		d          autoscaler.Decision
		wantReason string
	}{
		{autoscaler.Decision{Key: key, Valid: true, DesiredScale: 1, CurrentScale: 0}, ""},
		{autoscaler.Decision{Key: key, Valid: true, DesiredScale: 1, CurrentScale: 1, WantZero: true, ActivationTimedOut: true,
			Reason: autoscaler.ReasonActivationTimeout}, revision.WakeActivationTimeout},
		{autoscaler.Decision{Key: key, Valid: true, DesiredScale: 0, CurrentScale: 1, WantZero: true, ActivationTimedOut: true,
			Reason: autoscaler.ReasonActivationTimeout}, revision.WakeActivationTimeout},
		{autoscaler.Decision{Key: revision.Key{Namespace: "ns", Name: "unknown"}, ActivationTimedOut: true}, revision.WakeActivationTimeout},
		{autoscaler.Decision{Key: key, Valid: true, DesiredScale: 0, CurrentScale: 0, WantZero: true}, ""},
	}
	reg := revision.NewRegistry(revision.RegistryOptions{})
	c := New(Options{Registry: reg, Confirmer: &fakeConfirmer{confirmed: map[revision.Key]uint64{}}})
	spec := newSpec()
	spec.ActivationTimeout = 90 * time.Second
	reg.Upsert(key, spec)
	for i, s := range steps {
		c.RecordDecision(s.d)
		rev := reg.Snapshot().Get(key)
		got := ""
		if rev.WakeFailure != nil {
			got = rev.WakeFailure.Reason
			if want := "no backend became ready within the activation timeout (1m30s) of the wake-up"; rev.WakeFailure.Message != want {
				t.Fatalf("step %d: message %q, want %q", i, rev.WakeFailure.Message, want)
			}
		}
		if got != s.wantReason {
			t.Fatalf("step %d: wake failure %q, want %q", i, got, s.wantReason)
		}
	}
	if reg.Snapshot().Get(revision.Key{Namespace: "ns", Name: "unknown"}) != nil {
		t.Fatal("a decision for an unknown revision created it")
	}
}

// TestActivationTimeoutAnswersHeldRequests: through the real activator, a
// request held while a wake-up runs is answered 503 (a wake failure naming
// ActivationTimeout) as soon as mode control records the timed-out
// decision, long before its hold timeout; new requests too; once the
// revision is back at zero requests are held again.
func TestActivationTimeoutAnswersHeldRequests(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		key := revision.Key{Namespace: "ns", Name: "a"}
		reg := revision.NewRegistry(revision.RegistryOptions{})
		c := New(Options{Registry: reg, Confirmer: &fakeConfirmer{confirmed: map[revision.Key]uint64{}}})
		act := activator.New(activator.Options{})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go act.Run(ctx, reg)
		spec := newSpec()
		spec.Port = 8080
		spec.HoldTimeout = time.Hour
		reg.Upsert(key, spec)
		reg.SetSynced()
		synctest.Wait()

		acquire := func() chan error {
			ch := make(chan error, 1)
			go func() {
				_, release, err := act.Acquire(ctx, key)
				if release != nil {
					release()
				}
				ch <- err
			}()
			return ch
		}
		held := acquire()
		synctest.Wait()
		select {
		case err := <-held:
			t.Fatalf("answered before the timeout: %v", err)
		default:
		}
		start := time.Now()
		c.RecordDecision(autoscaler.Decision{Key: key, Valid: true, DesiredScale: 1, CurrentScale: 1, WantZero: true,
			ActivationTimedOut: true, Reason: autoscaler.ReasonActivationTimeout})
		synctest.Wait()
		wantWakeFailed := func(what string, ch chan error) {
			t.Helper()
			select {
			case err := <-ch:
				var we *activator.WakeFailedError
				if !errors.As(err, &we) || we.Failure.Reason != revision.WakeActivationTimeout || we.RetryAfter != activator.DefaultWakeRetryAfter {
					t.Fatalf("%s: err = %v, want a wake failure ActivationTimeout with Retry-After %v", what, err, activator.DefaultWakeRetryAfter)
				}
			default:
				t.Fatalf("%s: still held after the activation timeout", what)
			}
		}
		wantWakeFailed("held request", held)
		if time.Since(start) != 0 {
			t.Fatalf("answered after %v, want at once", time.Since(start))
		}
		fresh := acquire()
		synctest.Wait()
		wantWakeFailed("new request", fresh)

		// Back at zero: the next request is held (and wakes it again).
		c.RecordDecision(autoscaler.Decision{Key: key, Valid: true, WantZero: true})
		synctest.Wait()
		again := acquire()
		synctest.Wait()
		select {
		case err := <-again:
			t.Fatalf("request at zero after the failure answered: %v; want held", err)
		default:
		}
		cancel()
		synctest.Wait()
	})
}

// TestStoppedDecidingClearsActivationFailures: when the autoscaler stops
// (leadership lost), the activation failures it caused are cleared; a
// platform's failure stays.
func TestStoppedDecidingClearsActivationFailures(t *testing.T) {
	reg := revision.NewRegistry(revision.RegistryOptions{})
	c := New(Options{Registry: reg, Confirmer: &fakeConfirmer{confirmed: map[revision.Key]uint64{}}})
	a, b := revision.Key{Namespace: "ns", Name: "a"}, revision.Key{Namespace: "ns", Name: "b"}
	reg.Upsert(a, newSpec())
	reg.Upsert(b, newSpec())
	for _, k := range []revision.Key{a, b} {
		c.RecordDecision(autoscaler.Decision{Key: k, DesiredScale: 1, CurrentScale: 1, ActivationTimedOut: true})
	}
	reg.SetWakeFailure(b, &revision.WakeFailure{Reason: revision.WakeCrashLoopBackOff})
	c.StoppedDeciding()
	snap := reg.Snapshot()
	if f := snap.Get(a).WakeFailure; f != nil {
		t.Fatalf("a: %+v after StoppedDeciding, want none", f)
	}
	if f := snap.Get(b).WakeFailure; f == nil || f.Reason != revision.WakeCrashLoopBackOff {
		t.Fatalf("b: %+v, want the platform's CrashLoopBackOff kept", f)
	}
	reg.SetWakeFailure(b, nil)
	if f := reg.Snapshot().Get(b).WakeFailure; f != nil {
		t.Fatalf("b: %+v after the platform cleared, want none (the activation failure was cleared too)", f)
	}
}
