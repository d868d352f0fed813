package extproc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/thaw-dev/thaw/activator"
	"github.com/thaw-dev/thaw/revision"
)

// HealthService is the grpc.health.v1 service name a thaw process reports
// SERVING while its activator can answer ext_proc streams (its registry has
// synced and it is not shutting down). Envoy fleets in front of several
// thaw replicas health-check it on the thaw_extproc cluster.
const HealthService = "envoy.service.ext_proc.v3.ExternalProcessor"

// DefaultHoldBudget is the longest Envoy waits for an answer once told to
// (override_message_timeout); Envoy's ext_proc max_message_timeout must be
// the same value.
const DefaultHoldBudget = 60 * time.Second

// ServerOptions configures a Server.
type ServerOptions struct {
	Logger *zap.Logger
	// Activator decides; required.
	Activator *activator.Activator
	// HoldBudget is what the server sends as override_message_timeout when a
	// request must wait, and the longest it holds one (default 60 s). It
	// must equal the ext_proc filter's max_message_timeout and be >= every
	// revision's HoldTimeout (a longer HoldTimeout is cut to the budget).
	HoldBudget time.Duration
	// RetryAfter is the Retry-After of 503 answers (default 1 s; whole
	// seconds, rounded up).
	RetryAfter time.Duration
	// Registerer registers the server's metrics (nil: not registered).
	Registerer prometheus.Registerer
	// Limits bound idle and long-held streams (limits.go).
	Limits Limits
}

// Server is the envoy.service.ext_proc.v3.ExternalProcessor service of the
// activator path. Envoy opens one stream per request through the internal
// listener thaw_activator; the server reads x-thaw-revision from the
// request headers, asks the Activator for a backend (holding the request
// inside Envoy meanwhile) and answers with dynamic metadata naming the
// backend for the ORIGINAL_DST cluster, or with a local reply. The backend's
// slot is released when Envoy ends the stream, which it does when the HTTP
// request ends (see docs/activator.md, "Completion signal": this needs
// response_trailer_mode SEND in the filter's processing mode).
type Server struct {
	extprocv3.UnimplementedExternalProcessorServer

	opts    ServerOptions
	log     *zap.Logger
	answers *answers
	routes  routeCache
	metrics *metrics
	wake    *wakeMetrics
	margin  time.Duration

	limits       Limits
	limitMetrics *limitMetrics
	// hold counts requests that came through the hold listener
	// (holdpath.go).
	hold holdPath

	draining atomic.Bool
	// stop is closed by Drain once no request is held: answered streams end
	// then, so the gRPC server can stop.
	stop     chan struct{}
	stopOnce sync.Once
	streams  streamCount
}

var _ extprocv3.ExternalProcessorServer = (*Server)(nil)

// NewServer returns a Server. It panics when opts.Activator is nil or the
// metrics cannot be registered (wiring bugs).
func NewServer(opts ServerOptions) *Server {
	if opts.Activator == nil {
		panic("extproc: NewServer needs an Activator")
	}
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	if opts.HoldBudget <= 0 {
		opts.HoldBudget = DefaultHoldBudget
	}
	if opts.RetryAfter <= 0 {
		opts.RetryAfter = time.Second
	}
	ans, err := newAnswers(opts.RetryAfter, opts.HoldBudget)
	if err != nil {
		panic(err)
	}
	s := &Server{
		opts: opts, log: opts.Logger.Named("extproc"), answers: ans, metrics: newMetrics(), wake: newWakeMetrics(),
		stop:    make(chan struct{}),
		streams: streamCount{zero: make(chan struct{})},
		// Answer a little before Envoy's own deadline so the client gets a
		// 503 with Retry-After rather than Envoy's timeout error.
		margin: min(opts.HoldBudget/10, 500*time.Millisecond),
		limits: opts.Limits.withDefaults(), limitMetrics: newLimitMetrics(),
		routes: newRouteCache(maxCachedRoutes),
	}
	if opts.Registerer != nil {
		if err := errors.Join(s.metrics.register(opts.Registerer), s.limitMetrics.register(opts.Registerer),
			s.wake.register(opts.Registerer)); err != nil {
			panic(fmt.Sprintf("extproc: register metrics: %v", err))
		}
	}
	return s
}

// Register adds the ExternalProcessor service to g.
func (s *Server) Register(g *grpc.Server) {
	extprocv3.RegisterExternalProcessorServer(g, s)
}

// Process handles one request's stream. It never ends a stream whose
// request headers it has read without answering them.
//
// Per request it allocates no timer (the hold budget is armed only when the
// request waits), starts no goroutine and builds no message on the fast path
// (its only lock is the route cache's, held for a map lookup).
// Where the revision tracks no completion (container concurrency 0) the
// answer switches the stream to ShortMode and the handler returns at once:
// the stream costs one round trip. Otherwise the stream is kept until Envoy
// ends it with the request (awaitEnd).
func (s *Server) Process(stream extprocv3.ExternalProcessor_ProcessServer) error {
	s.streams.enter()
	defer s.streams.leave()
	s.metrics.streams.Inc()
	defer s.metrics.streams.Dec()

	req, err := stream.Recv()
	if err != nil {
		s.noHeaders(stream.Context())
		return nil // Envoy gave up before sending anything, or the header deadline passed
	}
	headersArrived(stream.Context())
	rh, ok := req.Request.(*extprocv3.ProcessingRequest_RequestHeaders)
	if !ok {
		return status.Errorf(codes.InvalidArgument, "extproc: first message is %T, want request_headers "+
			"(processing_mode.request_header_mode must be SEND)", req.Request)
	}
	if s.draining.Load() {
		return s.answer(stream, s.answers.shuttingDown, outcomeShuttingDown)
	}
	// The stream's metadata, set by Envoy's configuration, wins over the
	// header: in a route-level design the route's own header is added only
	// after ext_proc ran, so a header seen here could be the client's.
	val, n := revisionFromStream(stream)
	if n == 0 {
		val, n = revisionHeader(rh.RequestHeaders)
	}
	if n != 1 {
		return s.answer(stream, s.answers.badRequest, outcomeBadRequest)
	}
	key, err := revision.ParseKey(val)
	if err != nil {
		return s.answer(stream, s.answers.badRequest, outcomeBadRequest)
	}

	if resp, outcome := s.wakeAnswer(key, rh.RequestHeaders); resp != nil {
		return s.answer(stream, resp, outcome)
	}
	if fromHoldPath(stream) && s.hold.enter(key) {
		defer s.hold.leave(key)
	}
	h := holder{stream: stream, resp: s.answers.holdOn, clock: s.opts.Activator}
	pod, release, err := s.opts.Activator.AcquireWith(stream.Context(), key, activator.AcquireOptions{
		OnHold: h.hold, MaxHold: s.opts.HoldBudget - s.margin,
	})
	if err != nil {
		return s.refuse(stream, key, err)
	}
	defer release()
	if h.err != nil {
		s.metrics.answered(outcomeCanceled)
		return nil
	}
	route := s.routes.to(pod.Address, !pod.Tracked)
	if !h.start.IsZero() {
		route = s.coldStart(key, pod, h.since())
	}
	if err := stream.Send(route); err != nil {
		s.metrics.answered(outcomeCanceled)
		return nil
	}
	s.metrics.answered(outcomeRouted)
	if !pod.Tracked {
		return nil
	}
	return s.awaitEnd(stream)
}

// revisionFromStream reads the revision from the stream's gRPC metadata
// (RevisionHeader), which Envoy sets from configuration only
// (grpc_initial_metadata, for example per route in ExtProcPerRoute): a
// client cannot write it. It takes precedence over the request header.
func revisionFromStream(stream grpc.ServerStream) (string, int) {
	vals := metadata.ValueFromIncomingContext(stream.Context(), RevisionHeader)
	if len(vals) == 0 {
		return "", 0
	}
	return vals[0], len(vals)
}

// holder sends override_message_timeout when a request starts waiting,
// and notes when (for the cold-start header).
type holder struct {
	stream extprocv3.ExternalProcessor_ProcessServer
	resp   *extprocv3.ProcessingResponse
	clock  interface{ Now() time.Time }
	start  time.Time
	err    error
}

func (h *holder) hold() {
	h.start = h.clock.Now()
	h.err = h.stream.Send(h.resp)
}

func (h *holder) since() time.Duration { return h.clock.Now().Sub(h.start) }

// refuse answers an Acquire error.
func (s *Server) refuse(stream extprocv3.ExternalProcessor_ProcessServer, key revision.Key, err error) error {
	switch {
	case stream.Context().Err() != nil:
		s.metrics.answered(outcomeCanceled) // nobody to answer
		return nil
	case errors.Is(err, activator.ErrUnknownRevision):
		return s.answer(stream, s.answers.unknownRevision, outcomeUnknownRevision)
	case errors.Is(err, activator.ErrQueueFull):
		return s.answer(stream, s.answers.queueFull, outcomeQueueFull)
	case errors.Is(err, activator.ErrHeldLimit):
		return s.answer(stream, s.answers.heldLimit, outcomeHeldLimit)
	case errors.Is(err, activator.ErrShuttingDown):
		return s.answer(stream, s.answers.shuttingDown, outcomeShuttingDown)
	case errors.Is(err, activator.ErrWakeFailed):
		return s.answerWakeFailed(stream, key, err)
	case errors.Is(err, activator.ErrHoldTimeout), errors.Is(err, context.DeadlineExceeded):
		s.log.Info("request held too long", zap.String("revision", key.String()), zap.Error(err))
		return s.answer(stream, s.answers.holdTimeout, outcomeHoldTimeout)
	default:
		s.log.Error("unexpected activator error", zap.String("revision", key.String()), zap.Error(err))
		return s.answer(stream, s.answers.holdTimeout, outcomeHoldTimeout)
	}
}

func (s *Server) answer(stream extprocv3.ExternalProcessor_ProcessServer, resp *extprocv3.ProcessingResponse, outcome string) error {
	if err := stream.Send(resp); err != nil {
		s.metrics.answered(outcomeCanceled)
		return nil
	}
	s.metrics.answered(outcome)
	return nil
}

// awaitEnd keeps the stream until Envoy ends it, which marks the end of the
// HTTP request, answering any later message so Envoy never waits on us.
// Drain ends it early.
func (s *Server) awaitEnd(stream extprocv3.ExternalProcessor_ProcessServer) error {
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		for {
			req, err := stream.Recv()
			if err != nil {
				if !errors.Is(err, io.EOF) && stream.Context().Err() == nil {
					s.log.Debug("ext_proc stream ended with error", zap.Error(err))
				}
				return
			}
			if resp := continueResponse(req); resp != nil {
				if err := stream.Send(resp); err != nil {
					return
				}
			}
		}
	}()
	deadline, stop := s.requestDeadline()
	defer stop()
	select {
	case <-ended:
	case <-s.stop:
	case <-deadline:
		s.limitMetrics.maxDuration.Inc()
	}
	return nil
}

// GRPCServerOptions returns the gRPC server options for many short ext_proc
// streams (one per activator-path request): a pool of stream workers
// (max(32, 8 × GOMAXPROCS)), so a stream's handler runs on a reused
// goroutine whose stack has already grown, instead of a new goroutine that
// grows its stack again (runtime.newstack was about 12% of thaw's CPU on
// the activator path without it). Long-lived streams (ADS, stats, held
// requests) keep their worker; gRPC starts a goroutine when every worker is
// busy, so the pool is sized well above the handful of long-lived streams
// per Envoy.
func GRPCServerOptions() []grpc.ServerOption {
	return []grpc.ServerOption{grpc.NumStreamWorkers(uint32(max(32, 8*runtime.GOMAXPROCS(0))))}
}
