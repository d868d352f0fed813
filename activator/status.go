package activator

import (
	"context"
	"fmt"

	"github.com/thaw-dev/thaw/revision"
)

// Stats returns how many requests revision key holds and how many it has in
// flight on backends (0, 0 for an unknown revision). For `thaw status`.
func (a *Activator) Stats(key revision.Key) (held, inFlight int) {
	t := a.throttler(key)
	if t == nil {
		return 0, 0
	}
	return int(t.waiting.Load()), int(t.inFlight.Load())
}

// WaitIdle blocks until backend address ("ip:port") of revision key takes
// no new requests from the activator (it applied a snapshot without it, or
// the revision was deleted) and has no activator request in flight. The
// local platform calls it after removing a backend from the registry and
// before stopping it. It returns nil at once for a backend the activator
// never sent traffic to, and ctx.Err() (wrapped) when ctx ends first.
func (a *Activator) WaitIdle(ctx context.Context, key revision.Key, address string) error {
	for {
		t := a.throttler(key)
		if t == nil {
			if t = (*a.removed.Load())[key]; t == nil {
				return nil
			}
		}
		changed := t.changedChan()
		if !t.isRemoved() && t.podFor(address) != nil {
			select { // still offered: wait for the snapshot without it
			case <-changed:
				continue
			case <-ctx.Done():
				return fmt.Errorf("activator: wait for %s of %s to leave: %w", address, key, ctx.Err())
			}
		}
		tr := t.trackerFor(address)
		if tr == nil {
			return nil
		}
		idle, done := tr.idleChan()
		if tr.inFlight.Load() == 0 {
			done()
			return nil
		}
		select {
		case <-idle:
		case <-changed:
		case <-ctx.Done():
			done()
			return fmt.Errorf("activator: wait for %s of %s to drain: %w", address, key, ctx.Err())
		}
		done()
	}
}
