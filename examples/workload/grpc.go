package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
)

// grpcService implements grpc.testing.TestService (grpc-go's published
// interop protos) with one method of each call kind, so clients can try
// unary, server-streaming, client-streaming and bidirectional calls. Every
// call counts as one request in flight; answers carry the instance in the
// "x-workload-port" header and in the payload. The response headers also
// carry what GET /stats gives an HTTP client, which a gRPC-only server
// cannot serve: "x-workload-started-unix-nano" and
// "x-workload-listening-unix-nano" (Unix times in nanoseconds: process start
// and first accepting connections) and "x-workload-requests" (calls this
// process has begun, this one included), so a benchmark can tell a fresh
// backend and its start times from the answer to its first call.
type grpcService struct {
	testpb.UnimplementedTestServiceServer
	s *server
}

// payload names the instance: the workload's body, port and pid.
func (g *grpcService) payload() *testpb.Payload {
	return &testpb.Payload{Body: fmt.Appendf(nil, "%s port=%d pid=%d", g.s.cfg.body, g.s.port, g.s.pid)}
}

func (g *grpcService) header(ctx context.Context) {
	_ = grpc.SetHeader(ctx, metadata.Pairs(
		"x-workload-port", strconv.Itoa(g.s.port),
		"x-workload-started-unix-nano", strconv.FormatInt(g.s.started.UnixNano(), 10),
		"x-workload-listening-unix-nano", strconv.FormatInt(g.s.listening.UnixNano(), 10),
		"x-workload-requests", strconv.FormatInt(g.s.requests.Load(), 10),
	))
}

// wait sleeps the configured latency, or returns early when ctx ends.
func (g *grpcService) wait(ctx context.Context) error {
	if g.s.cfg.latency <= 0 {
		return nil
	}
	t := time.NewTimer(g.s.cfg.latency)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// UnaryCall answers one request with the instance payload.
func (g *grpcService) UnaryCall(ctx context.Context, _ *testpb.SimpleRequest) (*testpb.SimpleResponse, error) {
	defer g.s.track()()
	if err := g.wait(ctx); err != nil {
		return nil, err
	}
	g.header(ctx)
	return &testpb.SimpleResponse{Payload: g.payload()}, nil
}

// StreamingOutputCall sends one message per ResponseParameters entry,
// each after its interval.
func (g *grpcService) StreamingOutputCall(req *testpb.StreamingOutputCallRequest, stream grpc.ServerStreamingServer[testpb.StreamingOutputCallResponse]) error {
	defer g.s.track()()
	g.header(stream.Context())
	for _, p := range req.GetResponseParameters() {
		if d := time.Duration(p.GetIntervalUs()) * time.Microsecond; d > 0 {
			select {
			case <-time.After(d):
			case <-stream.Context().Done():
				return stream.Context().Err()
			case <-g.s.stopping:
			}
		}
		if err := stream.Send(&testpb.StreamingOutputCallResponse{Payload: g.payload()}); err != nil {
			return err
		}
	}
	return nil
}

// StreamingInputCall sums the payload sizes of every message received.
func (g *grpcService) StreamingInputCall(stream grpc.ClientStreamingServer[testpb.StreamingInputCallRequest, testpb.StreamingInputCallResponse]) error {
	defer g.s.track()()
	total := 0
	for {
		m, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			g.header(stream.Context())
			return stream.SendAndClose(&testpb.StreamingInputCallResponse{AggregatedPayloadSize: int32(total)})
		}
		if err != nil {
			return err
		}
		total += len(m.GetPayload().GetBody())
	}
}

// FullDuplexCall echoes each message's payload back at once.
func (g *grpcService) FullDuplexCall(stream grpc.BidiStreamingServer[testpb.StreamingOutputCallRequest, testpb.StreamingOutputCallResponse]) error {
	defer g.s.track()()
	g.header(stream.Context())
	for {
		m, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := stream.Send(&testpb.StreamingOutputCallResponse{Payload: m.GetPayload()}); err != nil {
			return err
		}
	}
}

// serveGRPC serves gRPC over cleartext HTTP/2 (h2c, prior knowledge) on ln
// until ctx ends, then stops gracefully within cfg.drainTimeout: the
// health service, the test service above.
func serveGRPC(ctx context.Context, cfg config, ln net.Listener, s *server) error {
	gs := grpc.NewServer()
	hs := health.NewServer()
	healthpb.RegisterHealthServer(gs, hs)
	testpb.RegisterTestServiceServer(gs, &grpcService{s: s})
	errc := make(chan error, 1)
	go func() { errc <- gs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	close(s.stopping)
	hs.Shutdown()
	done := make(chan struct{})
	go func() { gs.GracefulStop(); close(done) }()
	select {
	case <-done:
	case <-time.After(cfg.drainTimeout):
		gs.Stop()
	}
	return nil
}
