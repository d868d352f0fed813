package extproc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
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
	metrics *metrics
	margin  time.Duration

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
	ans, err := newAnswers(opts.RetryAfter)
	if err != nil {
		panic(err)
	}
	s := &Server{
		opts: opts, log: opts.Logger.Named("extproc"), answers: ans, metrics: newMetrics(),
		stop: make(chan struct{}),
		// Answer a little before Envoy's own deadline so the client gets a
		// 503 with Retry-After rather than Envoy's timeout error.
		margin: min(opts.HoldBudget/10, 500*time.Millisecond),
	}
	if opts.Registerer != nil {
		if err := s.metrics.register(opts.Registerer); err != nil {
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
func (s *Server) Process(stream extprocv3.ExternalProcessor_ProcessServer) error {
	s.streams.enter()
	defer s.streams.leave()
	s.metrics.streams.Inc()
	defer s.metrics.streams.Dec()

	req, err := stream.Recv()
	if err != nil {
		return nil // Envoy gave up before sending anything
	}
	rh, ok := req.Request.(*extprocv3.ProcessingRequest_RequestHeaders)
	if !ok {
		return status.Errorf(codes.InvalidArgument, "extproc: first message is %T, want request_headers "+
			"(processing_mode.request_header_mode must be SEND)", req.Request)
	}
	if s.draining.Load() {
		return s.answer(stream, s.answers.shuttingDown, outcomeShuttingDown)
	}
	vals := revisionHeader(rh.RequestHeaders)
	if len(vals) != 1 {
		return s.answer(stream, s.answers.badRequest, outcomeBadRequest)
	}
	key, err := revision.ParseKey(vals[0])
	if err != nil {
		return s.answer(stream, s.answers.badRequest, outcomeBadRequest)
	}

	ctx, cancel := context.WithTimeout(stream.Context(), s.opts.HoldBudget-s.margin)
	defer cancel()
	var sendErr error
	pod, release, err := s.opts.Activator.AcquireNotify(ctx, key, func() {
		sendErr = stream.Send(holdOn(s.opts.HoldBudget))
	})
	if err != nil {
		return s.refuse(stream, key, err)
	}
	defer release()
	if sendErr != nil {
		s.metrics.answered(outcomeCanceled)
		return nil
	}
	if err := stream.Send(routeTo(pod.Address)); err != nil {
		s.metrics.answered(outcomeCanceled)
		return nil
	}
	s.metrics.answered(outcomeRouted)
	return s.awaitEnd(stream)
}

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
	case errors.Is(err, activator.ErrShuttingDown):
		return s.answer(stream, s.answers.shuttingDown, outcomeShuttingDown)
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
	select {
	case <-ended:
	case <-s.stop:
	}
	return nil
}
