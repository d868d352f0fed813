package state

import (
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
)

// WakeFailure says waking a revision clearly failed (thaw's
// revision.WakeFailure: a process that exited, a pod in back-off): while
// the revision has no backend the module answers its held and new requests
// at once with 503, Retry-After and the reason, as the ext_proc activator
// does, instead of holding them for the hold timeout.
type WakeFailure struct {
	// Reason is a CamelCase word (ProcessExited, CrashLoopBackOff, ...).
	Reason string `json:"reason"`
	// Message is the detail for people, single line.
	Message string `json:"message,omitempty"`
	// RetryAtMs is when the platform tries again, Unix milliseconds (0:
	// unknown).
	RetryAtMs int64 `json:"retryAtMs,omitempty"`
}

// Bounds of a WakeFailure.
const (
	maxWakeReason  = 64
	maxWakeMessage = 512
	// DefaultWakeRetryAfter is the Retry-After when the platform does not
	// know when it tries again (thaw's activator.DefaultWakeRetryAfter).
	DefaultWakeRetryAfter = 10 * time.Second
)

// ErrWakeFailed is returned by Hold while the revision's wake-up has
// failed and it has no backend; the error is a *WakeFailedError.
var ErrWakeFailed = errors.New("activator: wake-up failed")

// WakeFailedError carries the failure a request is answered with.
type WakeFailedError struct{ Failure *WakeFailure }

func (e *WakeFailedError) Error() string { return "activator: wake-up failed: " + e.Failure.Reason }

// Unwrap returns ErrWakeFailed.
func (e *WakeFailedError) Unwrap() error { return ErrWakeFailed }

func (f *WakeFailure) validate() error {
	if f.Reason == "" || len(f.Reason) > maxWakeReason || strings.IndexFunc(f.Reason, func(r rune) bool {
		return !(r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9')
	}) >= 0 {
		return fmt.Errorf("wakeFailure.reason %q: want a word of at most %d letters and digits", f.Reason, maxWakeReason)
	}
	if len(f.Message) > maxWakeMessage*4 || f.RetryAtMs < 0 {
		return fmt.Errorf("wakeFailure: message over %d bytes or negative retryAtMs", maxWakeMessage*4)
	}
	return nil
}

// RetryAfter is how long until the platform's next attempt as of now, at
// least 1 s (DefaultWakeRetryAfter when unknown), in whole seconds.
func (f *WakeFailure) RetryAfter(now time.Time) int64 {
	d := DefaultWakeRetryAfter
	if f.RetryAtMs > 0 {
		d = max(time.UnixMilli(f.RetryAtMs).Sub(now), time.Second)
	}
	return int64((d + time.Second - 1) / time.Second)
}

// Body is the answer's body: "revision ns/name could not be woken: Reason:
// message" on one line (control characters dropped, the message cut to
// 512 bytes).
func (f *WakeFailure) Body(key string) string {
	b := "revision " + key + " could not be woken: " + f.Reason
	if m := oneLine(f.Message, maxWakeMessage); m != "" {
		b += ": " + m
	}
	return b + "\n"
}

func oneLine(s string, n int) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
	s = strings.TrimSpace(s)
	if len(s) > n {
		s = s[:n] // a rune cut in two is dropped below
	}
	return strings.ToValidUTF8(s, "")
}

// WakeFailure returns the revision's wake failure while it has no backend
// (nil otherwise).
func (r *Revision) WakeFailure() *WakeFailure {
	f := r.failure.Load()
	if f == nil || len(*r.backends.Load()) > 0 {
		return nil
	}
	return f
}

// failAllLocked ends every waiting request with WakeFailed (r.mu held);
// the caller notifies the returned waiters after unlocking.
func (r *Revision) failAllLocked(f *WakeFailure) []*Waiter {
	var failed []*Waiter
	for i := r.head; i < len(r.queue); i++ {
		w := r.queue[i]
		if w == nil || w.state != Waiting {
			continue
		}
		w.state, w.failure = WakeFailed, f
		r.unhold()
		failed = append(failed, w)
	}
	r.compactLocked()
	return failed
}
