package control

import (
	"fmt"

	"go.uber.org/zap"

	"github.com/thaw-dev/thaw/autoscaler"
	"github.com/thaw-dev/thaw/revision"
)

// recordActivation turns a decision's ActivationTimedOut into the
// revision's activation failure (revision.Registry.SetActivationFailure):
// while it is set and no backend is ready, the activator answers the
// revision's held and new requests at once (503, x-thaw-wake-failure:
// ActivationTimeout) instead of holding each for its hold timeout. A
// decision without it clears the failure: the revision is back at zero,
// where the next request starts the next wake-up, or a backend is ready.
// The message names the timeout, so it stays the same from one decision to
// the next and is published once.
func (c *Controller) recordActivation(d *autoscaler.Decision) {
	rev := c.opts.Registry.Snapshot().Get(d.Key)
	if rev == nil {
		return
	}
	var f *revision.WakeFailure
	if d.ActivationTimedOut {
		f = &revision.WakeFailure{Reason: revision.WakeActivationTimeout,
			Message: fmt.Sprintf("no backend became ready within the activation timeout (%s) of the wake-up", rev.Spec.ActivationTimeout)}
	}
	if !c.opts.Registry.SetActivationFailure(rev, f) {
		return
	}
	log := c.opts.Logger.With(zap.String("revision", d.Key.String()))
	if f == nil {
		log.Info("activation failure cleared: requests are held again",
			zap.Int32("replicas", d.CurrentScale), zap.Int32("ready", d.ReadyPods))
		return
	}
	log.Warn("wake-up failed: held and new requests are answered 503 until the revision is back at zero or a backend is ready",
		zap.String("reason", f.Reason), zap.String("message", f.Message),
		zap.Int32("replicas", d.CurrentScale), zap.Int32("ready", d.ReadyPods))
}

// StoppedDeciding clears the activation failures mode control recorded:
// call it when the autoscaler that fed RecordDecision stops (this replica
// lost leadership, or shuts down), since no later decision would clear
// them and a stale one would answer the revision's requests at once the
// next time it is at zero.
func (c *Controller) StoppedDeciding() {
	if n := c.opts.Registry.ClearActivationFailures(); n > 0 {
		c.opts.Logger.Info("activation failures cleared: this replica stopped deciding", zap.Int("revisions", n))
	}
}
