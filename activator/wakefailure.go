package activator

import (
	"errors"
	"fmt"
	"time"

	"github.com/thaw-dev/thaw/revision"
)

// ErrWakeFailed: the revision has no ready backend and its platform
// reported that waking it clearly failed (revision.WakeFailure). The
// returned error is a *WakeFailedError.
var ErrWakeFailed = errors.New("activator: wake-up failed")

// DefaultWakeRetryAfter is the Retry-After of a failed wake-up whose
// platform does not know when it tries again (a pod in back-off).
const DefaultWakeRetryAfter = 10 * time.Second

// WakeFailedError is what Acquire returns while a revision's wake-up has
// failed: held requests get it as soon as the failure is published, new
// ones at once, until the platform's next attempt clears it. errors.Is(err,
// ErrWakeFailed) holds.
type WakeFailedError struct {
	Key     revision.Key
	Failure revision.WakeFailure
	// RetryAfter is how long until the platform's next attempt (at least
	// 1 s; DefaultWakeRetryAfter when unknown).
	RetryAfter time.Duration
}

// Error returns "activator: wake-up of ns/name failed: Reason: Message".
func (e *WakeFailedError) Error() string {
	return fmt.Sprintf("activator: wake-up of %s failed: %s", e.Key, e.Failure.String())
}

// Unwrap returns ErrWakeFailed.
func (e *WakeFailedError) Unwrap() error { return ErrWakeFailed }

// wakeError returns the *WakeFailedError to answer with when the
// revision's current state fails fast (a wake failure and no backend),
// else nil.
func (t *throttler) wakeError(now time.Time) error {
	st := t.state.Load()
	if st.failure == nil || len(st.pods) > 0 {
		return nil
	}
	retry := DefaultWakeRetryAfter
	if !st.failure.RetryAt.IsZero() {
		retry = max(st.failure.RetryAt.Sub(now), time.Second)
	}
	return &WakeFailedError{Key: t.key, Failure: *st.failure, RetryAfter: retry}
}

// failChan returns a channel closed the next time a state that fails fast
// is installed (signalFailed). Held requests take it before checking
// wakeError, so a failure installed in between is never missed.
func (t *throttler) failChan() <-chan struct{} {
	t.changedMu.Lock()
	defer t.changedMu.Unlock()
	if t.failed == nil {
		t.failed = make(chan struct{})
	}
	return t.failed
}

// signalFailed wakes the held requests (see failChan).
func (t *throttler) signalFailed() {
	t.changedMu.Lock()
	if t.failed != nil {
		close(t.failed)
		t.failed = nil
	}
	t.changedMu.Unlock()
}
