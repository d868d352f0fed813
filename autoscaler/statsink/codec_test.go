package statsink

import (
	"context"
	"net"
	"testing"

	metricsv3 "github.com/envoyproxy/go-control-plane/envoy/service/metrics/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
)

// TestCodecCopiesRawMessage: a message that arrives in several buffers
// (gRPC's HTTP/2 frames) lands whole in the rawMessage, and the buffer is
// reused: a shorter message after a longer one holds only its own bytes.
func TestCodecCopiesRawMessage(t *testing.T) {
	c := newCodec()
	var m rawMessage
	long := marshal(t, envoyMsg("node-1", ts(1), gauge("upstream_rq_active", demoCluster, 3), counter("upstream_rq_total", demoCluster, 9)))
	short := marshal(t, envoyMsg("", ts(2), gauge("upstream_rq_active", demoCluster, 1)))
	for _, raw := range [][]byte{long, short, long} {
		split := mem.BufferSlice{mem.SliceBuffer(raw[:5]), mem.SliceBuffer(raw[5:17]), mem.SliceBuffer(raw[17:])}
		if err := c.Unmarshal(split, &m); err != nil {
			t.Fatal(err)
		}
		if string(m.b) != string(raw) {
			t.Fatalf("rawMessage holds %x, want %x", m.b, raw)
		}
	}
}

// TestCodecLeavesOtherMessages: anything but a rawMessage goes through
// gRPC's proto codec both ways.
func TestCodecLeavesOtherMessages(t *testing.T) {
	c := newCodec()
	in := envoyMsg("node-1", ts(1), gauge("upstream_rq_active", demoCluster, 3))
	out, err := c.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	got := &metricsv3.StreamMetricsMessage{}
	if err := c.Unmarshal(out, got); err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(in, got) {
		t.Fatalf("round trip gave %v, want %v", got, in)
	}
	if err := c.Unmarshal(mem.BufferSlice{mem.SliceBuffer([]byte{0x0a, 0x80})}, got); err == nil {
		t.Fatal("malformed bytes into a generated message: no error")
	}
}

// TestServerOptionsKeepOtherServices: with ServerOptions (the forced
// codec) on the shared server, another service still answers through a
// real connection.
func TestServerOptionsKeepOtherServices(t *testing.T) {
	gs := grpc.NewServer(ServerOptions()...)
	healthpb.RegisterHealthServer(gs, health.NewServer())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go gs.Serve(ln)
	t.Cleanup(gs.Stop)
	conn, err := grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	resp, err := healthpb.NewHealthClient(conn).Check(context.Background(), &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("health status %v, want SERVING", resp.GetStatus())
	}
}
