package xds

import (
	"context"
	"errors"
	"fmt"
	"time"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	endpointservice "github.com/envoyproxy/go-control-plane/envoy/service/endpoint/v3"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/tap"

	"github.com/thaw-dev/thaw/xds/ack"
)

// Defaults of Limits.
const (
	// DefaultMaxNodes is how many distinct Envoy node ids may hold xDS
	// streams at once.
	DefaultMaxNodes = 1024
	// DefaultMaxStreamsPerNode is how many xDS streams one node id may hold:
	// Envoy opens one ADS stream; a reconnect may overlap the old one.
	DefaultMaxStreamsPerNode = 4
	// DefaultMaxEDSStreamsPerNode is how many non-ADS EDS streams one node
	// id may hold: an Envoy whose clusters name thaw_xds as their EDS
	// config source (Envoy Gateway with thaw's extension) opens one stream
	// per revision cluster.
	DefaultMaxEDSStreamsPerNode = 10000
	// DefaultMaxEDSStreams bounds the non-ADS EDS streams of all nodes
	// together (each costs thaw a few goroutines and ~20 KB).
	DefaultMaxEDSStreams = 20000
	// DefaultAckTimeout is how long a stream may leave a response
	// unanswered (neither ACK nor NACK) while answering no other, or stay
	// open without a first request, before thaw closes it. Envoy answers
	// most responses in milliseconds; a CDS response waits for every
	// cluster to warm (minutes at 100,000 revisions), but EDS answers keep
	// coming meanwhile. A stream is given 1 ms more per resource of its
	// unanswered responses (Envoy applies each whole before answering, and
	// answers nothing else meanwhile: over 30 s for 100,000 clusters on a
	// loaded machine).
	// A response unanswered for 10 × that closes the stream whatever else
	// it answers.
	DefaultAckTimeout = 30 * time.Second
)

// Limits bound the xDS state clients can create, and how long one client
// can hold up scale to zero. Zero fields take the defaults.
type Limits struct {
	// MaxNodes bounds distinct node ids with a stream; a stream of a new
	// node id beyond it is refused (ResourceExhausted). Streams that have
	// not named their node yet count against MaxNodes*MaxStreamsPerNode.
	MaxNodes int
	// MaxStreamsPerNode bounds the ADS streams of one node id; more are
	// refused.
	MaxStreamsPerNode int
	// MaxEDSStreamsPerNode bounds the non-ADS EDS streams of one node id
	// (one per revision cluster); more are refused.
	MaxEDSStreamsPerNode int
	// MaxEDSStreams bounds the non-ADS EDS streams of all nodes.
	MaxEDSStreams int
	// AckTimeout is how long a response may stay unanswered before thaw
	// closes the stream (see excludeStalled for why that is safe).
	AckTimeout time.Duration
}

func (l Limits) withDefaults() Limits {
	if l.MaxNodes <= 0 {
		l.MaxNodes = DefaultMaxNodes
	}
	if l.MaxStreamsPerNode <= 0 {
		l.MaxStreamsPerNode = DefaultMaxStreamsPerNode
	}
	if l.MaxEDSStreamsPerNode <= 0 {
		l.MaxEDSStreamsPerNode = DefaultMaxEDSStreamsPerNode
	}
	if l.MaxEDSStreams <= 0 {
		l.MaxEDSStreams = DefaultMaxEDSStreams
	}
	if l.AckTimeout <= 0 {
		l.AckTimeout = DefaultAckTimeout
	}
	return l
}

// Reasons of thaw_xds_streams_refused_total and thaw_xds_streams_closed_total.
const (
	refusedTooManyStreams = "too_many_streams"
	refusedTooManyNodes   = "too_many_nodes"
	refusedNodeStreams    = "too_many_streams_per_node"
	closedAckTimeout      = "ack_timeout"
	closedNoRequest       = "no_request"
)

var (
	errStalled   = errors.New("xds: stream closed by thaw: no ACK or NACK within the ack timeout")
	errNoRequest = errors.New("xds: stream closed by thaw: no request within the ack timeout")
)

type limitMetrics struct {
	refused *prometheus.CounterVec
	closed  *prometheus.CounterVec
}

func newLimitMetrics(reg prometheus.Registerer) *limitMetrics {
	m := &limitMetrics{
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "thaw", Subsystem: "xds", Name: "streams_refused_total",
			Help: "xDS streams refused by a limit: too_many_streams, too_many_nodes, too_many_streams_per_node.",
		}, []string{"reason"}),
		closed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "thaw", Subsystem: "xds", Name: "streams_closed_total",
			Help: "xDS streams thaw closed and excluded from confirmation: ack_timeout (a response unanswered " +
				"past the ack timeout), no_request (no first request within it).",
		}, []string{"reason"}),
	}
	for _, r := range []string{refusedTooManyStreams, refusedTooManyNodes, refusedNodeStreams} {
		m.refused.WithLabelValues(r)
	}
	for _, r := range []string{closedAckTimeout, closedNoRequest} {
		m.closed.WithLabelValues(r)
	}
	if reg != nil {
		reg.MustRegister(m.refused, m.closed)
	}
	return m
}

// streamCloserKey carries a stream's cancel func from TapHandle to the
// stream-open callback.
type streamCloserKey struct{}

// adsMethods are the xDS methods whose streams TapHandle makes closable:
// ADS and the non-ADS EDS streams.
var adsMethods = map[string]bool{
	"/" + discoveryv3.AggregatedDiscoveryService_ServiceDesc.ServiceName + "/StreamAggregatedResources": true,
	"/" + discoveryv3.AggregatedDiscoveryService_ServiceDesc.ServiceName + "/DeltaAggregatedResources":  true,
	"/" + endpointservice.EndpointDiscoveryService_ServiceDesc.ServiceName + "/StreamEndpoints":         true,
	"/" + endpointservice.EndpointDiscoveryService_ServiceDesc.ServiceName + "/DeltaEndpoints":          true,
}

// TapHandle returns the grpc.InTapHandle that makes ADS streams closable
// by thaw: go-control-plane ends a stream only when the client does or
// its Recv fails, and a Recv blocked on a silent client fails only when
// the stream's context ends. Install it on the gRPC server (chained with
// other tap handles); without it a stalled stream is still excluded from
// confirmation but stays open.
func (s *Server) TapHandle() tap.ServerInHandle {
	return func(ctx context.Context, info *tap.Info) (context.Context, error) {
		if !adsMethods[info.FullMethodName] {
			return ctx, nil
		}
		ctx, cancel := context.WithCancelCause(ctx)
		return context.WithValue(ctx, streamCloserKey{}, cancel), nil
	}
}

func closerOf(ctx context.Context) context.CancelCauseFunc {
	if ctx == nil {
		return nil
	}
	c, _ := ctx.Value(streamCloserKey{}).(context.CancelCauseFunc)
	return c
}

// admitStream refuses a new ADS stream when MaxNodes*MaxStreamsPerNode
// ADS streams are open, a new non-ADS EDS stream (eds) when MaxEDSStreams
// are. Called from the stream-open callbacks.
func (s *Server) admitStream(eds bool) error {
	ads, edsOpen := s.tracker.Counts()
	if eds {
		if edsOpen >= s.lim.MaxEDSStreams {
			s.limMetrics.refused.WithLabelValues(refusedTooManyStreams).Inc()
			return status.Errorf(codes.ResourceExhausted, "xds: too many EDS streams (limit %d)", s.lim.MaxEDSStreams)
		}
		return nil
	}
	if ads >= s.lim.MaxNodes*s.lim.MaxStreamsPerNode {
		s.limMetrics.refused.WithLabelValues(refusedTooManyStreams).Inc()
		return status.Errorf(codes.ResourceExhausted, "xds: too many streams (limit %d)",
			s.lim.MaxNodes*s.lim.MaxStreamsPerNode)
	}
	return nil
}

// admitNode records the node a stream named in its first request, or
// refuses the stream (go-control-plane then closes it) for a node id
// beyond MaxNodes or a stream beyond MaxStreamsPerNode.
func (s *Server) admitNode(k ack.StreamKey, id, cluster string) error {
	streams, nodes, ok := s.tracker.ClaimNode(k, id, cluster, s.lim.MaxNodes, s.lim.MaxStreamsPerNode, s.lim.MaxEDSStreamsPerNode)
	limit := s.lim.MaxStreamsPerNode
	if s.tracker.IsEDS(k) {
		limit = s.lim.MaxEDSStreamsPerNode
	}
	switch {
	case ok:
		return nil
	case streams >= limit:
		s.limMetrics.refused.WithLabelValues(refusedNodeStreams).Inc()
		s.log.Warn("xDS stream refused: too many streams for one node id", zap.String("node", id),
			zap.Bool("eds", limit == s.lim.MaxEDSStreamsPerNode), zap.Int("limit", limit))
		return status.Errorf(codes.ResourceExhausted, "xds: node %q has %d streams (limit %d)", id, streams, limit)
	default:
		s.limMetrics.refused.WithLabelValues(refusedTooManyNodes).Inc()
		s.log.Warn("xDS stream refused: too many nodes", zap.String("node", id), zap.Int("nodes", nodes),
			zap.Int("limit", s.lim.MaxNodes))
		return status.Errorf(codes.ResourceExhausted, "xds: too many nodes (limit %d)", s.lim.MaxNodes)
	}
}

// runStallCheck closes stalled streams until ctx ends, checking every
// quarter of AckTimeout so a stream is closed at most 1.25 AckTimeout
// after the response it left unanswered.
func (s *Server) runStallCheck(ctx context.Context) {
	for {
		t := s.clock.NewTimer(s.lim.AckTimeout / 4)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
			s.excludeStalled(s.clock.Now())
		}
	}
}

// excludeStalled closes every stream that has left a response unanswered
// for AckTimeout, or sent no request at all for AckTimeout, and excludes
// it from confirmation at once.
//
// Why this keeps scale to zero safe: a stream that thaw closed counts
// exactly like an Envoy that disconnected, which never counted (an Envoy
// cut off from its control plane keeps its last configuration, and no
// control plane can confirm anything through a dead stream). A real Envoy
// reconnects within its retry backoff; on the new stream it receives the
// current state (proxy mode for a revision going to zero) and counts again
// as soon as it subscribes to the revision's endpoints, so it must ACK
// before scale to zero can go on. A client that never reconnects is not
// routing through thaw's configuration: a stalled Envoy that still routes
// with an older serve-mode assignment could only reach backends removed
// after the scale-to-zero grace period (30 s by default, on top of the
// ack timeout), the same exposure as an Envoy that lost its network path
// to thaw. The alternative, waiting for it forever, lets any client block
// scale to zero for every revision.
func (s *Server) excludeStalled(now time.Time) {
	for _, st := range s.tracker.Stalled(now, s.lim.AckTimeout) {
		reason, cause := closedAckTimeout, errStalled
		if st.NoRequest {
			reason, cause = closedNoRequest, errNoRequest
		}
		s.limMetrics.closed.WithLabelValues(reason).Inc()
		s.recordExcluded(ExcludedNode{ID: st.Node, Reason: reason, At: now, Pending: st.Pending})
		s.log.Warn("closing stalled xDS stream; the node no longer counts for confirmation until it reconnects and ACKs",
			zap.String("node", st.Node), zap.Int64("stream", st.Key.ID), zap.Bool("delta", st.Key.Delta),
			zap.String("reason", reason), zap.Int("pendingResponses", st.Pending),
			zap.Duration("oldest", st.Oldest), zap.Duration("ackTimeout", s.lim.AckTimeout))
		if st.Close != nil {
			st.Close(cause)
		}
		if s.onExcluded != nil {
			s.onExcluded(st.Node, fmt.Sprintf("%s: %v", reason, cause))
		}
	}
	s.completeFlips(nil)
	s.notify.broadcast()
}
