package local

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/thaw-dev/thaw/revision"
)

// drainPoll is how often a draining instance's connections are counted.
// Reading /proc/net/tcp costs CPU in proportion to the host's sockets
// (about a millisecond per thousand), so the poll is not tighter.
const drainPoll = 200 * time.Millisecond

// drainIdlePolls is how many polls in a row must see no connection: one
// more poll covers an Envoy worker that picked the backend just before it
// applied the acknowledged endpoints and connects a moment later.
const drainIdlePolls = 2

// drainTimeout is Options.DrainTimeout when set, else the revision's
// request-timeout plus hold-timeout (Envoy's route timeout for it, so no
// request that Envoy would let finish is cut), else DefaultDrainTimeout.
func (in *instance) drainTimeout() time.Duration {
	if d := in.p.opts.DrainTimeout; d > 0 {
		return d
	}
	spec := in.rs.cfg.Load().Spec
	if spec.RequestTimeout > 0 {
		return spec.RequestTimeout + spec.HoldTimeout
	}
	return DefaultDrainTimeout
}

// drain waits until the process of an instance scaled away (already out of
// the registry's backends) can be signalled without cutting a request:
//
//  1. routing: every Envoy acknowledged endpoints without it (Router), or,
//     with no Router, DrainPeriod passed;
//  2. the Drainer (the activator) sends it nothing more and has nothing in
//     flight on it;
//  3. no established TCP connection is left on its port (see conns.go).
//
// The whole drain is bounded by Options.DrainTimeout; it also ends when the
// process exits or ctx ends. With a negative DrainTimeout only DrainPeriod
// is waited.
func (in *instance) drain(ctx context.Context, proc *process) {
	p := in.p
	if p.opts.DrainTimeout < 0 {
		in.waitPeriod(ctx, proc)
		return
	}
	limit := in.drainTimeout()
	start := p.opts.Clock.Now()
	dctx, cancel := context.WithCancel(ctx)
	defer cancel()
	timedOut := make(chan struct{})
	deadline := p.opts.Clock.NewTimer(limit)
	defer deadline.Stop()
	go func() {
		select {
		case <-deadline.C():
			close(timedOut)
			cancel()
		case <-proc.done:
			cancel()
		case <-dctx.Done():
		}
	}()
	ended := func(step string, err error) {
		select {
		case <-timedOut:
			in.log.Warn("drain timeout reached; stopping anyway", zap.String("waitingFor", step),
				zap.Duration("drainTimeout", limit), zap.Error(err))
		default:
			if ctx.Err() == nil && !processGone(proc) {
				in.log.Warn("drain step failed", zap.String("step", step), zap.Error(err))
			}
		}
	}
	b := revision.Backend{Address: loopback, Port: proc.port, Ready: true}
	if p.opts.Router != nil {
		if err := p.opts.Router.WaitUnrouted(dctx, in.rs.cfg.Load().Key, b); err != nil {
			ended("routing", err)
			return
		}
	} else if !in.waitPeriod(dctx, proc) {
		ended("drain period", dctx.Err())
		return
	}
	if p.opts.Drainer != nil {
		if err := p.opts.Drainer.WaitIdle(dctx, in.rs.cfg.Load().Key, b); err != nil {
			ended("activator requests", err)
			return
		}
	}
	if err := in.waitConnsClosed(dctx, proc.port, start.Add(limit)); err != nil {
		ended("connections", err)
		return
	}
	in.log.Debug("drained", zap.Duration("took", p.opts.Clock.Since(start)))
}

// waitPeriod waits DrainPeriod (if positive); false when ctx ended or the
// process exited first.
func (in *instance) waitPeriod(ctx context.Context, proc *process) bool {
	p := in.p
	if p.opts.DrainPeriod <= 0 {
		return true
	}
	t := p.opts.Clock.NewTimer(p.opts.DrainPeriod)
	defer t.Stop()
	select {
	case <-t.C():
		return true
	case <-ctx.Done():
		return false
	case <-proc.done:
		return false
	}
}

// waitConnsClosed polls the established connections on port until
// drainIdlePolls polls in a row find it idle, and returns nil; or returns
// an error wrapping ctx.Err() with the last count when ctx ends first (at
// the drain's deadline, which it logs), or the error reading the
// connection tables. See busyConns for "idle".
func (in *instance) waitConnsClosed(ctx context.Context, port int32, deadline time.Time) error {
	p := in.p
	if p.drainLoads != nil {
		defer p.drainLoads.watch(in.rs.cfg.Load().Key)()
	}
	idle, logged := 0, false
	for {
		busy, err := in.busyConns(ctx, port)
		if err != nil {
			return err
		}
		if busy == 0 {
			idle++
			if idle >= drainIdlePolls {
				return nil
			}
		} else {
			idle = 0
			if !logged {
				in.log.Info("waiting for connections to close before stopping", zap.Int("connections", busy),
					zap.Time("drainDeadline", deadline))
				logged = true
			}
		}
		t := p.opts.Clock.NewTimer(drainPoll)
		select {
		case <-t.C():
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%d connections open on port %d: %w", busy, port, ctx.Err())
		}
	}
}

// busyConns returns how many established connections on port may carry a
// request: all of them, less the ones Envoy reports holding to the backend
// when Envoy (Options.Load, read once for every draining revision: see
// drainLoads) also reports no request in flight to it. Envoy
// keeps idle connections of its original-destination cluster (requests
// the activator released) open long after their last request; they must
// not hold a drain for the whole drain timeout.
func (in *instance) busyConns(ctx context.Context, port int32) (int, error) {
	counts, err := establishedConns([]int32{port}, in.p.probeConns)
	if err != nil {
		return 0, err
	}
	n := counts[port]
	if n == 0 || in.p.opts.Load == nil {
		return n, nil
	}
	loads, err := in.p.drainLoads.get(ctx, in.rs.cfg.Load().Key)
	if err != nil {
		in.log.Debug("Envoy's connections to the backend unknown; counting all", zap.Error(err))
		return n, nil
	}
	l := loads[hostPort(port)]
	if l.Requests > 0 {
		return max(n, l.Requests), nil
	}
	return max(n-l.Connections, 0), nil
}

// processGone reports whether the process has exited.
func processGone(proc *process) bool {
	select {
	case <-proc.done:
		return true
	default:
		return false
	}
}
