package activator

import (
	"context"
	"fmt"
)

// Shutdown stops admitting requests (Acquire returns ErrShuttingDown) and
// waits until no request is held. Held requests still get a backend if one
// frees up; when ctx ends first they fail with ErrShuttingDown and Shutdown
// returns ctx.Err() (wrapped) once they have left. Calling it again is safe.
func (a *Activator) Shutdown(ctx context.Context) error {
	a.shutting.Store(true)
	if a.heldTotal.Load() == 0 {
		a.drainOnce.Do(func() { close(a.drained) })
	}
	select {
	case <-a.drained:
		return nil
	case <-ctx.Done():
	}
	a.abortOnce.Do(func() { close(a.abort) })
	<-a.drained
	return fmt.Errorf("activator: shutdown: held requests answered with %w: %w", ErrShuttingDown, ctx.Err())
}

func (a *Activator) leftHold() {
	if a.heldTotal.Add(-1) == 0 && a.shutting.Load() {
		a.drainOnce.Do(func() { close(a.drained) })
	}
}
