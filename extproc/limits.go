package extproc

import (
	"context"
	"errors"
	"fmt"
	"time"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/tap"
)

// Defaults of Limits.
const (
	// DefaultHeaderTimeout is how long a new stream may stay silent before
	// its request headers arrive. Envoy sends them right after opening the
	// stream (the filter opens it when it has the headers), so anything
	// near a second already means a client that is not Envoy.
	DefaultHeaderTimeout = 10 * time.Second
	// DefaultMaxRequestDuration is how long a routed request keeps its
	// backend slot (container concurrency) and its stream. It matches
	// Knative's longest revision timeout (600 s by default), so a request
	// Knative would let run keeps its slot here too.
	DefaultMaxRequestDuration = 10 * time.Minute
	// DefaultMaxStreamsPerConnection is the HTTP/2 concurrent-stream limit
	// thaw's gRPC server announces (grpc.MaxConcurrentStreams). Envoy
	// multiplexes every held request of a worker over one connection and
	// does not open another connection when the server's
	// SETTINGS_MAX_CONCURRENT_STREAMS is reached: streams beyond it wait
	// inside Envoy's codec until ext_proc's message timeout fails them
	// (envoyproxy/envoy issue 13933). The limit must therefore stay at or
	// above what one Envoy can open: the bootstrap's thaw_extproc circuit
	// breaker (max_requests 100000). It still caps a single connection
	// 10x below the previous 2^20.
	DefaultMaxStreamsPerConnection = 100000
)

// Limits bound what one ext_proc client can hold. Zero fields take the
// defaults.
type Limits struct {
	// HeaderTimeout closes a stream that has not sent its request headers
	// within it (thaw_extproc_streams_closed_total{reason="header_timeout"}).
	// Enforced only on servers that install TapHandle.
	HeaderTimeout time.Duration
	// MaxRequestDuration ends a routed request's stream and frees its slot
	// once it is that old (reason "max_duration"); the HTTP request itself
	// goes on in Envoy (docs/activator.md: an answered stream may close).
	// Without it two streams that send headers and then nothing would keep
	// every slot of a revision with container concurrency 1 and two pods.
	MaxRequestDuration time.Duration
}

func (l Limits) withDefaults() Limits {
	if l.HeaderTimeout <= 0 {
		l.HeaderTimeout = DefaultHeaderTimeout
	}
	if l.MaxRequestDuration <= 0 {
		l.MaxRequestDuration = DefaultMaxRequestDuration
	}
	return l
}

// Reasons of thaw_extproc_streams_closed_total.
const (
	closedHeaderTimeout = "header_timeout"
	closedMaxDuration   = "max_duration"
)

var errHeaderTimeout = errors.New("extproc: no request headers within the header timeout")

// processMethod is the full gRPC method name of ExternalProcessor.Process.
var processMethod = "/" + extprocv3.ExternalProcessor_ServiceDesc.ServiceName + "/" +
	extprocv3.ExternalProcessor_ServiceDesc.Streams[0].StreamName

// limitMetrics counts streams the limits closed.
type limitMetrics struct {
	closed        *prometheus.CounterVec
	headerTimeout prometheus.Counter
	maxDuration   prometheus.Counter
}

func newLimitMetrics() *limitMetrics {
	closed := prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "thaw", Subsystem: "extproc", Name: "streams_closed_total",
		Help: "ext_proc streams thaw closed because of a limit: header_timeout (no request headers in time), " +
			"max_duration (a routed request held its slot too long).",
	}, []string{"reason"})
	return &limitMetrics{closed: closed,
		headerTimeout: closed.WithLabelValues(closedHeaderTimeout),
		maxDuration:   closed.WithLabelValues(closedMaxDuration)}
}

// headerTimer is the context value TapHandle stores in a Process stream's
// context: the timer that cancels the stream when headers are late.
type headerTimer struct{ t *time.Timer }

type headerTimerKey struct{}

// TapHandle returns the grpc.InTapHandle that starts the header deadline
// of every Process stream. A blocked Recv can only be interrupted through
// the stream's context, and only a tap handle can give a stream its
// context: the returned context is cancelled with errHeaderTimeout when
// HeaderTimeout passes before Process has read the first message. Cost per
// stream: one cancelable context and one runtime timer, no goroutine.
func (s *Server) TapHandle() tap.ServerInHandle {
	return func(ctx context.Context, info *tap.Info) (context.Context, error) {
		if info.FullMethodName != processMethod {
			return ctx, nil
		}
		ctx, cancel := context.WithCancelCause(ctx)
		t := time.AfterFunc(s.limits.HeaderTimeout, func() { cancel(errHeaderTimeout) })
		return context.WithValue(ctx, headerTimerKey{}, headerTimer{t: t}), nil
	}
}

// GRPCServerOptions returns the options the shared gRPC server needs for
// these limits: the header-deadline tap and the per-connection stream cap
// (maxStreams; zero means DefaultMaxStreamsPerConnection).
func (s *Server) GRPCServerOptions(maxStreams uint32) []grpc.ServerOption {
	if maxStreams == 0 {
		maxStreams = DefaultMaxStreamsPerConnection
	}
	return []grpc.ServerOption{grpc.InTapHandle(s.TapHandle()), grpc.MaxConcurrentStreams(maxStreams)}
}

// headersArrived stops the stream's header deadline. It is a no-op on a
// server without TapHandle.
func headersArrived(ctx context.Context) {
	if ht, ok := ctx.Value(headerTimerKey{}).(headerTimer); ok {
		ht.t.Stop()
	}
}

// noHeaders counts a stream that ended before its first message when the
// header deadline ended it.
func (s *Server) noHeaders(ctx context.Context) {
	if errors.Is(context.Cause(ctx), errHeaderTimeout) {
		s.limitMetrics.headerTimeout.Inc()
	}
}

// requestDeadline returns a channel that fires when a routed request has
// held its slot for MaxRequestDuration, and the func that stops it.
func (s *Server) requestDeadline() (<-chan time.Time, func() bool) {
	t := time.NewTimer(s.limits.MaxRequestDuration)
	return t.C, t.Stop
}

func (m *limitMetrics) register(r prometheus.Registerer) error {
	if err := r.Register(m.closed); err != nil {
		return fmt.Errorf("extproc: register limit metrics: %w", err)
	}
	return nil
}
