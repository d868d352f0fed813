package extproc

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
)

// Drain shuts the server down gracefully: new streams are answered 503
// (shutting down) at once; held requests still get a backend if one frees
// up, and are answered 503 with Retry-After when ctx ends (Activator
// Shutdown). Once nothing is held, streams of requests in flight are ended
// (their requests continue in Envoy unaffected) so that the gRPC server's
// GracefulStop can return. Drain returns when every stream handler has
// returned; the error is non-nil when ctx ended while requests were held.
// Call it before grpc.Server.GracefulStop.
func (s *Server) Drain(ctx context.Context) error {
	s.draining.Store(true)
	err := s.opts.Activator.Shutdown(ctx)
	s.stopOnce.Do(func() { close(s.stop) })
	s.streams.waitZero(ctx)
	if err != nil {
		return fmt.Errorf("extproc: drain: %w", err)
	}
	return nil
}

// streamCount counts running stream handlers with one atomic per stream
// start and end (no lock, no channel on the request path). Unlike
// sync.WaitGroup it allows handlers to start while someone waits.
type streamCount struct {
	n       atomic.Int64
	waiting atomic.Bool
	once    sync.Once
	zero    chan struct{} // made by newServer; closed at the first drop to 0 once waiting is set
}

func (c *streamCount) enter() { c.n.Add(1) }

// leave ends a handler. The decrement comes before reading waiting, and
// waitZero sets waiting before reading n: one of the two sees the other, so
// a drop to 0 is never missed.
func (c *streamCount) leave() {
	if c.n.Add(-1) == 0 && c.waiting.Load() {
		c.once.Do(func() { close(c.zero) })
	}
}

// waitZero returns when no handler runs, or at the latest when ctx ends.
// Drain calls it once.
func (c *streamCount) waitZero(ctx context.Context) {
	c.waiting.Store(true)
	if c.n.Load() == 0 {
		return
	}
	select {
	case <-c.zero:
	case <-ctx.Done():
	}
}
