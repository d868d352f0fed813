package local

import (
	"time"

	"go.uber.org/zap"

	"github.com/thaw-dev/thaw/revision"
)

// wakeFailed tells the registry that this instance's process exited (or
// did not start) before it was ready, when no instance of the revision is
// ready: the activator then answers the revision's held and new requests
// at once (503, Retry-After until the restart in backoff) instead of
// holding them for the hold timeout. The failure lasts until the next
// start of a process of the revision, one becoming ready, or the revision
// going to zero instances.
func (in *instance) wakeFailed(msg string, backoff time.Duration) {
	p := in.p
	p.mu.Lock()
	defer p.mu.Unlock()
	rs := in.rs
	for _, x := range rs.instances {
		if x.ready && !x.stopping {
			return
		}
	}
	f := &revision.WakeFailure{Reason: revision.WakeProcessExited, Message: in.name + ": " + msg,
		RetryAt: p.opts.Clock.Now().Add(backoff)}
	if !rs.wakeFailed {
		in.log.Warn("wake-up failed; requests are answered 503 until the restart",
			zap.String("reason", f.Reason), zap.String("message", f.Message), zap.Duration("backoff", backoff))
	}
	rs.wakeFailed = true
	p.opts.Registry.SetWakeFailure(rs.cfg.Load().Key, f)
}

// clearWakeFailureLocked clears the revision's wake failure, if any.
func (p *Platform) clearWakeFailureLocked(rs *processGroup) {
	if !rs.wakeFailed {
		return
	}
	rs.wakeFailed = false
	p.opts.Registry.SetWakeFailure(rs.cfg.Load().Key, nil)
}
