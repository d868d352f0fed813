package revision

import "time"

// Reasons of a WakeFailure: CamelCase words, the same in the activator's
// answer (x-thaw-wake-failure header), logs, metrics and the Kubernetes
// Revision condition. The Kubernetes ones are the kubelet's and scheduler's
// own words.
const (
	// WakeProcessExited: a local process exited (or could not be started)
	// before it was ready.
	WakeProcessExited = "ProcessExited"
	// WakeCrashLoopBackOff, WakeImagePullBackOff, WakeErrImagePull: a pod's
	// container is waiting with that reason.
	WakeCrashLoopBackOff = "CrashLoopBackOff"
	WakeImagePullBackOff = "ImagePullBackOff"
	WakeErrImagePull     = "ErrImagePull"
	// WakeUnschedulable: the scheduler found no node for a pod.
	WakeUnschedulable = "Unschedulable"
	// WakeActivationTimeout: no backend became ready within the revision's
	// activation timeout.
	WakeActivationTimeout = "ActivationTimeout"
)

// WakeFailure says that waking a revision clearly failed: while a revision
// with no ready backend carries one, the activator answers its held and new
// requests at once (503 + Retry-After naming Reason) instead of holding
// them for the hold timeout. The platform that saw the failure sets it and
// clears it when its next attempt starts (a restarted process, a new pod)
// or a backend becomes ready.
type WakeFailure struct {
	// Reason is one of the Wake* constants (a CamelCase word).
	Reason string
	// Message is the detail for people: exit status and the end of stderr,
	// the kubelet's or scheduler's message. Single line.
	Message string
	// RetryAt is when the platform's next attempt is expected (a restart
	// after back-off); zero when unknown.
	RetryAt time.Time
}

// String returns "Reason: Message".
func (f *WakeFailure) String() string {
	if f.Message == "" {
		return f.Reason
	}
	return f.Reason + ": " + f.Message
}

func wakeFailureEqual(a, b *WakeFailure) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Reason == b.Reason && a.Message == b.Message && a.RetryAt.Equal(b.RetryAt)
}

// SetWakeFailure records (f != nil) or clears (f == nil) why waking key
// failed. Like the desired scale it does not bump the revision's
// Generation (Envoy does not see it), and it never creates a revision: a
// key the registry does not know is ignored. It publishes only when the
// failure changed.
func (r *Registry) SetWakeFailure(key Key, f *WakeFailure) {
	if f != nil {
		c := *f
		f = &c
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	e := r.entries[key]
	if e == nil || wakeFailureEqual(e.wakeFailure, f) {
		return
	}
	e.wakeFailure = f
	e.cached = nil
	r.pending[key] = struct{}{}
	r.changedLocked()
}

// SetActivationFailure records (f != nil) or clears (f == nil) mode
// control's verdict that a wake-up of basis's revision produced no ready
// backend within its activation timeout (Reason WakeActivationTimeout).
// It is a fact apart from the platform's (SetWakeFailure), so neither
// writer clears the other's; a Revision's WakeFailure shows the platform's
// when both are set. Like SetDecision it records nothing, and returns
// false, when basis's revision is gone (deleted, or deleted and created
// again since basis was read); it publishes only when the failure changed.
// changed reports whether it did.
func (r *Registry) SetActivationFailure(basis *Revision, f *WakeFailure) (changed bool) {
	if f != nil {
		c := *f
		f = &c
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	e := r.entries[basis.Key]
	if e == nil || basis.Generation < e.created || wakeFailureEqual(e.activationFailure, f) {
		return false
	}
	e.activationFailure = f
	if e.wakeFailure == nil {
		r.changedEntryLocked(basis.Key, e)
	}
	return true
}

// publishedWakeFailure is the failure a Revision shows: the platform's,
// else mode control's.
func (e *entry) publishedWakeFailure() *WakeFailure {
	if e.wakeFailure != nil {
		return e.wakeFailure
	}
	return e.activationFailure
}

// ClearActivationFailures clears every revision's activation failure
// (SetActivationFailure) and returns how many it cleared. Mode control
// calls it when its autoscaler stops deciding (leadership lost, shutdown):
// no later decision would clear them. It visits every revision, so it is
// for such rare moments only.
func (r *Registry) ClearActivationFailures() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for key, e := range r.entries {
		if e.activationFailure == nil {
			continue
		}
		e.activationFailure = nil
		n++
		if e.wakeFailure == nil {
			r.changedEntryLocked(key, e)
		}
	}
	return n
}
