package extproc

import (
	"context"
	"fmt"
	"sync"
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

// streamCount counts running stream handlers. Unlike sync.WaitGroup it
// allows handlers to start while someone waits.
type streamCount struct {
	mu   sync.Mutex
	n    int
	zero chan struct{} // closed when n drops to 0; nil while n == 0
}

func (c *streamCount) enter() {
	c.mu.Lock()
	if c.n == 0 {
		c.zero = make(chan struct{})
	}
	c.n++
	c.mu.Unlock()
}

func (c *streamCount) leave() {
	c.mu.Lock()
	c.n--
	if c.n == 0 {
		close(c.zero)
		c.zero = nil
	}
	c.mu.Unlock()
}

// waitZero returns when no handler runs, or at the latest when ctx ends.
func (c *streamCount) waitZero(ctx context.Context) {
	c.mu.Lock()
	ch := c.zero
	c.mu.Unlock()
	if ch == nil {
		return
	}
	select {
	case <-ch:
	case <-ctx.Done():
	}
}
