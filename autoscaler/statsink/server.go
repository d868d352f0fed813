package statsink

import (
	"errors"
	"io"
	"sync"
	"time"

	metricsv3 "github.com/envoyproxy/go-control-plane/envoy/service/metrics/v3"
	"github.com/hashicorp/golang-lru/v2/simplelru"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"k8s.io/utils/clock"

	"github.com/thaw-dev/thaw/autoscaler"
)

// MaxRecvMsgSize is the gRPC receive limit, in bytes, the server that hosts
// the sink must set (grpc.MaxRecvMsgSize; internal/app sets it on thaw's
// shared server). Envoy
// sends a whole flush in one message unless batch_size is set: about 60 bytes
// per stat, so 10,000 revision clusters with the stats_matcher of
// envoy/stats-sink.yaml (3 stats thaw reads plus a few for operators) make
// 2-4 MiB, close to gRPC's 4 MiB default. 64 MiB leaves room for 100k
// clusters; a larger message is refused by gRPC, counted as reason
// "oversized", and ends the stream (Envoy reconnects at the next flush).
const MaxRecvMsgSize = 64 << 20

// DefaultNodeExpiry is how long a node's state is kept after its last stream
// ended when Options.NodeExpiry is zero.
const DefaultNodeExpiry = 10 * time.Second

// Options configures New.
type Options struct {
	// Logger receives connection events and rate-limited bad-input warnings.
	// Nil means no logging.
	Logger *zap.Logger
	// Recorder receives one Sample per revision per Envoy flush, called from
	// the streams' goroutines (concurrently for different nodes). Required.
	Recorder autoscaler.Recorder
	// Clock drives node expiry. Nil means the real clock.
	Clock clock.Clock
	// NodeExpiry is how long a node's state (counter bases, revisions seen)
	// is kept after its last stream ended; a node reconnecting within it
	// continues where it stopped, otherwise it starts afresh and zero samples
	// are recorded for its revisions. Zero means DefaultNodeExpiry.
	NodeExpiry time.Duration
	// Registerer receives the sink's metrics (thaw_statsink_*). Nil means a
	// private registry (metrics not exported).
	Registerer prometheus.Registerer
	// Limits bound the state a client can make the sink keep (limits.go).
	Limits Limits
}

// Server is the envoy.service.metrics.v3.MetricsService server. It is safe
// for concurrent use; each Envoy stream is served by its own goroutine.
type Server struct {
	log    *zap.Logger
	rec    autoscaler.Recorder
	clk    clock.Clock
	expiry time.Duration
	m      *metrics

	lim   Limits
	mu    sync.Mutex
	nodes map[string]*node
	// idle holds the nodes without a stream, least recently disconnected
	// first (limits.go). Guarded by mu.
	idle *simplelru.LRU[string, *node]
	// lastAnonLog rate-limits logs about streams without a node id.
	lastAnonLog time.Time
}

// rawMetricsServer is the handler type of serviceDesc.
type rawMetricsServer interface {
	streamMetrics(stream grpc.ServerStream) error
}

var _ rawMetricsServer = (*Server)(nil)

// serviceDesc serves MetricsService/StreamMetrics like the generated
// descriptor, but receives each message as raw bytes (rawMessage), which the
// sink decodes itself without building a Go struct per metric.
var serviceDesc = grpc.ServiceDesc{
	ServiceName: metricsv3.MetricsService_ServiceDesc.ServiceName,
	HandlerType: (*rawMetricsServer)(nil),
	Streams: []grpc.StreamDesc{{
		StreamName:    metricsv3.MetricsService_ServiceDesc.Streams[0].StreamName,
		ClientStreams: true,
		Handler: func(srv any, stream grpc.ServerStream) error {
			return srv.(rawMetricsServer).streamMetrics(stream)
		},
	}},
	Metadata: metricsv3.MetricsService_ServiceDesc.Metadata,
}

// New returns a sink that records samples into opts.Recorder. It panics when
// opts.Recorder is nil.
func New(opts Options) *Server {
	if opts.Recorder == nil {
		panic("statsink: Options.Recorder is required")
	}
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.NodeExpiry <= 0 {
		opts.NodeExpiry = DefaultNodeExpiry
	}
	if opts.Registerer == nil {
		opts.Registerer = prometheus.NewRegistry()
	}
	srv := &Server{
		log:    opts.Logger.With(zap.String("component", "statsink")),
		rec:    opts.Recorder,
		clk:    opts.Clock,
		expiry: opts.NodeExpiry,
		m:      newMetrics(opts.Registerer),
		lim:    opts.Limits.withDefaults(),
		nodes:  map[string]*node{},
	}
	srv.idle = newIdleNodes(srv)
	return srv
}

// Register adds the MetricsService to s. Set ServerOptions on s so that large
// flushes fit.
func (srv *Server) Register(s *grpc.Server) {
	s.RegisterService(&serviceDesc, srv)
}

// streamMetrics serves one Envoy stream until it ends.
func (srv *Server) streamMetrics(stream grpc.ServerStream) error {
	srv.m.streams.Inc()
	defer srv.m.streams.Dec()
	var (
		msg rawMessage
		n   *node
	)
	defer func() {
		msg.release()
		if n != nil {
			srv.disconnect(n)
		}
	}()
	for {
		if err := stream.RecvMsg(&msg); err != nil {
			if errors.Is(err, io.EOF) {
				return stream.SendMsg(&metricsv3.StreamMetricsResponse{})
			}
			if status.Code(err) == codes.ResourceExhausted { // above the receive limit
				var bad badCounts
				bad[reasonOversized]++
				if n != nil {
					n.mu.Lock()
					n.noteBad(&bad, srv.clk.Now())
					n.mu.Unlock()
				} else {
					srv.noteAnonBad(stream, &bad)
				}
			}
			return err
		}
		raw := msg.bytes()
		now := srv.clk.Now()
		if n == nil {
			id, err := nodeIDParts(raw)
			if err != nil || id == "" {
				var bad badCounts
				bad[reasonNoIdentifier]++
				srv.noteAnonBad(stream, &bad)
				return status.Error(codes.InvalidArgument,
					"statsink: the first message of a stream must carry identifier.node.id")
			}
			if n, err = srv.connect(nodeKey(stream.Context(), id)); err != nil {
				var bad badCounts
				bad[reasonOf(err)]++
				srv.noteAnonBad(stream, &bad)
				return err
			}
		}
		n.ingestParts(raw, now)
		msg.release()
	}
}

// connect attaches a stream to the node key (nodeKey), creating or reviving
// its state.
// It returns a gRPC ResourceExhausted error when a limit refuses the stream
// (see admit).
func (srv *Server) connect(id string) (*node, error) {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	n := srv.nodes[id]
	if err := srv.admit(id, n); err != nil {
		return nil, err
	}
	if n == nil {
		n = &node{id: id, sink: srv, log: srv.log.With(zap.String("node", id)), entries: map[string]*entry{}}
		srv.nodes[id] = n
		srv.m.nodes.Inc()
		n.log.Info("Envoy connected")
	} else {
		n.log.Info("Envoy reconnected", zap.Int("streams", n.streams+1))
	}
	n.streams++
	n.epoch++
	srv.idle.Remove(id) // the eviction callback ignores a node with a stream
	if n.expiryStop != nil {
		close(n.expiryStop)
		n.expiryStop = nil
	}
	n.mu.Lock()
	n.baseGen = n.gen + 1
	n.mu.Unlock()
	return n, nil
}

// disconnect detaches a stream; after the node's last stream it starts the
// expiry timer.
func (srv *Server) disconnect(n *node) {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	n.streams--
	if n.streams > 0 {
		return
	}
	n.log.Info("Envoy stream ended", zap.Duration("expiry", srv.expiry))
	srv.idle.Add(n.id, n)
	epoch, stop := n.epoch, make(chan struct{})
	n.expiryStop = stop
	t := srv.clk.NewTimer(srv.expiry)
	go func() {
		select {
		case <-t.C():
			srv.expire(n, epoch)
		case <-stop:
			t.Stop()
		}
	}()
}

// expire forgets a node that did not reconnect within the expiry and records
// zero samples for its revisions.
func (srv *Server) expire(n *node, epoch uint64) {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if n.epoch != epoch || n.streams > 0 || srv.nodes[n.id] != n {
		return
	}
	srv.forgetLocked(n)
}

// forgetLocked drops an idle node's state and records zero samples for its
// revisions. Call with srv.mu held.
func (srv *Server) forgetLocked(n *node) {
	delete(srv.nodes, n.id)
	srv.idle.Remove(n.id) // no-op from the eviction callback: the node is gone
	if n.expiryStop != nil {
		close(n.expiryStop)
		n.expiryStop = nil
	}
	n.log.Info("Envoy expired")
	// Under srv.mu so that a reconnect of the same id cannot record samples
	// before these zeros; before the node gauge falls, so that a reader who
	// sees the node gone also sees its zeros.
	n.zeroAll(srv.clk.Now())
	srv.m.nodes.Dec()
}

// noteAnonBad counts bad input of a stream without a node id and logs it at
// most once per logEvery for all such streams together.
func (srv *Server) noteAnonBad(stream grpc.ServerStream, b *badCounts) {
	srv.m.addBad(b)
	now := srv.clk.Now()
	srv.mu.Lock()
	if !srv.lastAnonLog.IsZero() && now.Sub(srv.lastAnonLog) < logEvery {
		srv.mu.Unlock()
		return
	}
	srv.lastAnonLog = now
	srv.mu.Unlock()
	addr := ""
	if p, ok := peer.FromContext(stream.Context()); ok && p.Addr != nil {
		addr = p.Addr.String()
	}
	srv.log.Warn("bad stats stream (logged at most once a minute)",
		append(badFields(b), zap.String("peer", addr))...)
}
