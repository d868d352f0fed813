package kube

import (
	"context"
	"net"
	"sync/atomic"
	"testing"
	"time"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	metricsv3 "github.com/envoyproxy/go-control-plane/envoy/service/metrics/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	clocktesting "k8s.io/utils/clock/testing"
)

// recvOnly serves MetricsService and ExternalProcessor streams that only
// read until the stream ends, the hardest kind of handler to stop (no
// context check).
type recvOnly struct {
	metricsv3.UnimplementedMetricsServiceServer
	extprocv3.UnimplementedExternalProcessorServer
	active atomic.Int32
}

func (r *recvOnly) StreamMetrics(s metricsv3.MetricsService_StreamMetricsServer) error {
	r.active.Add(1)
	defer r.active.Add(-1)
	for {
		if _, err := s.Recv(); err != nil {
			return nil
		}
	}
}

func (r *recvOnly) Process(s extprocv3.ExternalProcessor_ProcessServer) error {
	r.active.Add(1)
	defer r.active.Add(-1)
	for {
		if _, err := s.Recv(); err != nil {
			return nil
		}
	}
}

func TestStreamGate(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	gate := NewStreamGate(clk, time.Second)
	srv := &recvOnly{}
	s := grpc.NewServer(grpc.StreamInterceptor(gate.StreamInterceptor()))
	metricsv3.RegisterMetricsServiceServer(s, srv)
	extprocv3.RegisterExternalProcessorServer(s, srv)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = s.Serve(ln) }()
	defer s.Stop()
	conn, err := grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	metrics := metricsv3.NewMetricsServiceClient(conn)
	extproc := extprocv3.NewExternalProcessorClient(conn)

	// A new gate is a follower's: it refuses stats streams until it leads.
	if gate.Open() {
		t.Error("new gate open before any election was won")
	}
	st0, err := metrics.StreamMetrics(ctx)
	if err == nil {
		_, err = st0.CloseAndRecv()
	}
	if status.Code(err) != codes.Unavailable {
		t.Errorf("stats stream before leading: %v, want Unavailable", err)
	}
	gate.SetLeader(true)

	stats, err := metrics.StreamMetrics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := stats.Send(&metricsv3.StreamMetricsMessage{}); err != nil {
		t.Fatal(err)
	}
	held, err := extproc.Process(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := held.Send(&extprocv3.ProcessingRequest{}); err != nil {
		t.Fatal(err)
	}
	waitActive(t, srv, 2)

	gate.SetLeader(false)
	// New streams are refused at once.
	st2, err := metrics.StreamMetrics(ctx)
	if err == nil {
		_, err = st2.CloseAndRecv()
	}
	if status.Code(err) != codes.Unavailable {
		t.Errorf("new stats stream on a follower: %v, want Unavailable", err)
	}
	// ext_proc streams are served by every replica.
	p2, err := extproc.Process(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := p2.Send(&extprocv3.ProcessingRequest{}); err != nil {
		t.Fatal(err)
	}
	waitActive(t, srv, 3)
	// The open stats stream ends after the handover delay, even though
	// its handler never looks at its context; the ext_proc streams stay.
	clk.Step(time.Second)
	if _, err := stats.CloseAndRecv(); status.Code(err) != codes.Unavailable {
		t.Errorf("open stats stream after losing leadership: %v, want Unavailable", err)
	}
	waitActive(t, srv, 2)
	if err := held.Send(&extprocv3.ProcessingRequest{}); err != nil {
		t.Errorf("held ext_proc stream broken: %v", err)
	}
	if err := p2.CloseSend(); err != nil {
		t.Fatal(err)
	}
	waitActive(t, srv, 1)

	// Leadership back: streams are accepted again, and a pending handover
	// timer of an earlier loss does not end them.
	gate.SetLeader(true)
	gate.SetLeader(false)
	gate.SetLeader(true)
	st3, err := metrics.StreamMetrics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := st3.Send(&metricsv3.StreamMetricsMessage{}); err != nil {
		t.Fatal(err)
	}
	waitActive(t, srv, 2)
	clk.Step(time.Second)
	if err := st3.Send(&metricsv3.StreamMetricsMessage{}); err != nil {
		t.Errorf("stream of a leader ended: %v", err)
	}
	if !gate.Open() {
		t.Error("gate closed while leading")
	}
}

func waitActive(t *testing.T, srv *recvOnly, n int32) {
	t.Helper()
	for range 3000 {
		if srv.active.Load() == n {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("%d active handlers, want %d", srv.active.Load(), n)
}
