package extproc

import (
	"context"
	"errors"
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// BenchmarkDecisions measures complete ext_proc decisions per second over
// real gRPC on loopback, as Envoy makes them: open a stream, send request
// headers, receive the routing answer, half-close (request over), wait for
// the server to end the stream. Parallel clients share one connection, as
// Envoy's workers share the thaw_extproc cluster's HTTP/2 connection.
//
// With container concurrency 0 the server ends the stream right after the
// answer (ShortMode); with container concurrency > 0 it waits for Envoy's
// end of the stream (the request's end).
func BenchmarkDecisions(b *testing.B) {
	b.Run("cc=0", func(b *testing.B) { benchDecisions(b, newEnv(b, 5*time.Second), 0) })
	b.Run("cc=1000", func(b *testing.B) { benchDecisions(b, newEnv(b, 5*time.Second), 1000) })
	// With the header deadline tap and the request deadline (limits.go),
	// as thaw's shared server runs them.
	b.Run("cc=0/limits", func(b *testing.B) { benchDecisions(b, newEnvWith(b, 5*time.Second, Limits{}, true), 0) })
	// The floor: a server that answers every stream with one fixed message
	// and does nothing else, on the same gRPC server options. What cc=0
	// costs above it is thaw's; the rest is gRPC's (HTTP/2, protobuf) and
	// the client's.
	b.Run("floor", func(b *testing.B) { benchStreams(b, floorClient(b), onlyRevision) })
	// The headers a browser's navigation brings through the activator
	// listener's forward rules as they stood after issue 30 (wake headers
	// and x-*; docs/activator.md, "Forwarded headers"): the per-request
	// cost of forwarding them, against cc=0's x-thaw-revision alone.
	b.Run("cc=0/wake-headers", func(b *testing.B) {
		e := newEnv(b, 5*time.Second)
		e.revision(demo, 0, time.Minute, 10000, "127.0.0.1", "127.0.0.2", "127.0.0.3", "127.0.0.4")
		benchStreams(b, e.client, browserHeaders)
	})
}

// onlyRevision is what the narrow forward rules send: x-thaw-revision.
var onlyRevision = rawHeaders("x-thaw-revision", "default/demo")

// browserHeaders is what the wide forward rules send for a browser's
// navigation through thaw_http (Envoy adds x-forwarded-*; x-envoy-* and
// x-request-id are not forwarded).
var browserHeaders = rawHeaders(
	":method", "GET",
	":path", "/articles/2026/11/scale-to-zero?ref=home",
	"user-agent", "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36",
	"accept", "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,image/apng,*/*;q=0.8,application/signed-exchange;v=b3;q=0.7",
	"x-forwarded-for", "203.0.113.7",
	"x-forwarded-proto", "https",
	"x-thaw-revision", "default/demo",
)

// rawHeaders is a request_headers message with exactly kv.
func rawHeaders(kv ...string) *extprocv3.ProcessingRequest {
	hm := &corev3.HeaderMap{}
	for i := 0; i+1 < len(kv); i += 2 {
		hm.Headers = append(hm.Headers, &corev3.HeaderValue{Key: kv[i], RawValue: []byte(kv[i+1])})
	}
	return &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_RequestHeaders{
		RequestHeaders: &extprocv3.HttpHeaders{Headers: hm, EndOfStream: true}}}
}

func benchDecisions(b *testing.B, e *env, cc int) {
	e.revision(demo, cc, time.Minute, 10000, "127.0.0.1", "127.0.0.2", "127.0.0.3", "127.0.0.4")
	benchStreams(b, e.client, onlyRevision)
}

// benchStreams runs complete streams in parallel against client.
func benchStreams(b *testing.B, client extprocv3.ExternalProcessorClient, req *extprocv3.ProcessingRequest) {
	b.ReportAllocs()
	cpu0 := processCPU(b)
	b.SetParallelism(16) // many concurrent streams, as under load
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		for pb.Next() {
			st, err := client.Process(ctx)
			if err != nil {
				b.Error(err)
				return
			}
			if err := st.Send(req); err != nil {
				b.Error(err)
				return
			}
			resp, err := st.Recv()
			if err != nil || resp.GetRequestHeaders() == nil {
				b.Errorf("answer %v, %v", resp, err)
				return
			}
			st.CloseSend()
			if _, err := st.Recv(); !errors.Is(err, io.EOF) {
				b.Errorf("stream end: %v", err)
				return
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64((processCPU(b)-cpu0).Microseconds())/float64(b.N), "cpu-us/stream")
}

// floorServer answers every stream's first message with a fixed answer
// and ends the stream: no revision lookup, no balancing, no metrics.
type floorServer struct {
	extprocv3.UnimplementedExternalProcessorServer
}

var floorAnswer = &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_RequestHeaders{
	RequestHeaders: &extprocv3.HeadersResponse{}}}

func (floorServer) Process(st extprocv3.ExternalProcessor_ProcessServer) error {
	if _, err := st.Recv(); err != nil {
		return err
	}
	return st.Send(floorAnswer)
}

func floorClient(b *testing.B) extprocv3.ExternalProcessorClient {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	g := grpc.NewServer(GRPCServerOptions()...)
	extprocv3.RegisterExternalProcessorServer(g, floorServer{})
	go g.Serve(ln)
	conn, err := grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		conn.Close()
		g.Stop()
	})
	return extprocv3.NewExternalProcessorClient(conn)
}

// processCPU returns this process's user + system CPU time so far.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
