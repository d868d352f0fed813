package kube

import (
	"context"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"k8s.io/utils/clock"
)

// gRPC method prefixes of the streams Envoy keeps open to thaw.
const (
	MethodPrefixADS     = "/envoy.service.discovery.v3.AggregatedDiscoveryService/"
	MethodPrefixMetrics = "/envoy.service.metrics.v3.MetricsService/"
	MethodPrefixExtProc = "/envoy.service.ext_proc.v3.ExternalProcessor/"
	// MethodPrefixEDS is the non-ADS EDS service Envoy Gateway's Envoy
	// uses (one stream per revision cluster); gated like ADS, since only
	// the leader's tracker confirms scale to zero.
	MethodPrefixEDS = "/envoy.service.endpoint.v3.EndpointDiscoveryService/"
)

// DefaultHandoverDelay is how long a replica that lost leadership keeps
// Envoy's long-lived streams before ending them: two health-check
// intervals, so by the time Envoy reconnects its health check has marked
// this replica unhealthy and the new stream goes to the new leader.
const DefaultHandoverDelay = 2 * HealthCheckInterval

// StreamGate makes Envoy's gRPC streams follow the leader. Envoy's active
// health checks steer new streams to the leader, but Envoy does not close
// an established HTTP/2 stream when its host turns unhealthy
// (close_connections_on_host_health_failure covers tcp_proxy only), so a
// replica that loses leadership must end its long-lived streams itself:
//
//   - ADS and EDS (xDS) and MetricsService (stats) streams: refused with
//     UNAVAILABLE while not leading, and ended HandoverDelay after
//     leadership is lost; Envoy reconnects to the new leader.
//   - ext_proc streams (one per request on the activator path) are not
//     gated: every replica serves them, since each replica's activator
//     sees revisions and backends through its own informers. A request
//     held on a follower is released by that follower when a backend
//     becomes ready; the leader learns of it from Envoy's stats
//     (upstream_rq_active of the revision cluster counts held requests)
//     and scales. Envoy spreads ext_proc streams over the replicas that
//     pass the ExtProcHealthService check.
//
// Install StreamInterceptor on thaw's grpc.Server and call SetLeader from
// the Elector (Elector.Observe). A StreamGate starts closed: a replica that
// runs an election is a follower until it wins, and a follower that never
// led must not take an Envoy's stats (its autoscaler does not run) or
// serve it xDS. Without election, install no gate.
type StreamGate struct {
	clock clock.WithDelayedExecution
	delay time.Duration

	mu      sync.Mutex
	leading bool
	gen     uint64 // bumped on every change, to drop stale timers
	streams map[*gatedStream]struct{}
}

// gatedStream lets the gate end a stream while its handler still runs:
// after close, sends fail without touching the transport, which gRPC tears
// down once the interceptor returned (that also unblocks the handler's
// Recv, so the handler goroutine ends).
type gatedStream struct {
	grpc.ServerStream
	ctx    context.Context
	cancel context.CancelCauseFunc

	mu     sync.RWMutex
	closed bool
}

func (s *gatedStream) Context() context.Context { return s.ctx }

func (s *gatedStream) guard(f func() error) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return errNotLeading
	}
	return f()
}

func (s *gatedStream) SendMsg(m any) error {
	return s.guard(func() error { return s.ServerStream.SendMsg(m) })
}

func (s *gatedStream) SendHeader(md metadata.MD) error {
	return s.guard(func() error { return s.ServerStream.SendHeader(md) })
}

func (s *gatedStream) SetHeader(md metadata.MD) error {
	return s.guard(func() error { return s.ServerStream.SetHeader(md) })
}

func (s *gatedStream) close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
}

// errNotLeading ends gated streams on a replica that does not lead.
var errNotLeading = status.Error(codes.Unavailable, "thaw: this replica does not lead; reconnect to the leader")

// NewStreamGate returns a closed gate: SetLeader(true) opens it. delay <= 0
// means DefaultHandoverDelay; clk nil means the real clock.
func NewStreamGate(clk clock.WithDelayedExecution, delay time.Duration) *StreamGate {
	if clk == nil {
		clk = clock.RealClock{}
	}
	if delay <= 0 {
		delay = DefaultHandoverDelay
	}
	g := &StreamGate{clock: clk, delay: delay, streams: map[*gatedStream]struct{}{}}
	return g
}

// SetLeader opens the gate (true) or closes it (false): new gated streams
// are refused at once, open ADS and metrics streams end after the handover
// delay unless leadership comes back first.
func (g *StreamGate) SetLeader(leading bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.leading == leading {
		return
	}
	g.leading = leading
	g.gen++
	if leading {
		return
	}
	gen := g.gen
	g.clock.AfterFunc(g.delay, func() { g.endStreams(gen) })
}

func (g *StreamGate) endStreams(gen uint64) {
	g.mu.Lock()
	if g.gen != gen || g.leading {
		g.mu.Unlock()
		return
	}
	streams := make([]*gatedStream, 0, len(g.streams))
	for s := range g.streams {
		streams = append(streams, s)
	}
	g.mu.Unlock()
	for _, s := range streams {
		s.cancel(errNotLeading)
	}
}

// Open reports whether the gate is open (this replica leads).
func (g *StreamGate) Open() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.leading
}

// StreamInterceptor returns the grpc.StreamServerInterceptor that applies
// the gate to ADS, EDS and MetricsService streams; other methods (ext_proc,
// health, reflection) pass through.
func (g *StreamGate) StreamInterceptor() grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		if !strings.HasPrefix(info.FullMethod, MethodPrefixADS) && !strings.HasPrefix(info.FullMethod, MethodPrefixMetrics) &&
			!strings.HasPrefix(info.FullMethod, MethodPrefixEDS) {
			return handler(srv, ss)
		}
		g.mu.Lock()
		if !g.leading {
			g.mu.Unlock()
			return errNotLeading
		}
		ctx, cancel := context.WithCancelCause(ss.Context())
		gs := &gatedStream{ServerStream: ss, ctx: ctx, cancel: cancel}
		g.streams[gs] = struct{}{}
		g.mu.Unlock()
		defer func() {
			g.mu.Lock()
			delete(g.streams, gs)
			g.mu.Unlock()
			cancel(nil)
		}()
		done := make(chan error, 1)
		go func() { done <- handler(srv, gs) }()
		select {
		case err := <-done:
			return err
		case <-ctx.Done():
		}
		if context.Cause(ctx) != errNotLeading {
			return <-done // the stream itself ended: the handler follows
		}
		// Handlers may block in Recv, which only the transport can
		// interrupt: return now, gRPC ends the stream, the handler's Recv
		// fails and its goroutine exits.
		gs.close()
		return errNotLeading
	}
}
