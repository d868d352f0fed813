package statsink

import (
	"context"
	"errors"
	"google.golang.org/grpc/encoding"
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

// countingPool counts buffers returned to it.
type countingPool struct{ puts int }

func (p *countingPool) Get(n int) *[]byte { b := make([]byte, n, max(n, 4096)); return &b } // above gRPC's pooling threshold
func (p *countingPool) Put(*[]byte)       { p.puts++ }

// TestCodecHoldsFrames: a message that arrives in several buffers (gRPC's
// HTTP/2 frames) is read in place: the rawMessage keeps the buffers after
// gRPC drops its own reference and hands them back to the pool on release,
// for every message of a stream.
func TestCodecHoldsFrames(t *testing.T) {
	c := newCodec(nil)
	var m rawMessage
	long := marshal(t, envoyMsg("node-1", ts(1), gauge("upstream_rq_active", demoCluster, 3), counter("upstream_rq_total", demoCluster, 9)))
	short := marshal(t, envoyMsg("", ts(2), gauge("upstream_rq_active", demoCluster, 1)))
	for _, raw := range [][]byte{long, short, long} {
		pool := &countingPool{}
		var data mem.BufferSlice
		for _, part := range [][]byte{raw[:5], raw[5:17], raw[17:]} {
			b := pool.Get(len(part))
			copy(*b, part)
			data = append(data, mem.NewBuffer(b, pool))
		}
		if err := c.Unmarshal(data, &m); err != nil {
			t.Fatal(err)
		}
		data.Free() // what gRPC does when Unmarshal returns
		if pool.puts != 0 {
			t.Fatalf("%d buffers returned to the pool while the message is held", pool.puts)
		}
		var got []byte
		for _, p := range m.bytes() {
			got = append(got, p...)
		}
		if string(got) != string(raw) {
			t.Fatalf("rawMessage holds %x, want %x", got, raw)
		}
		m.release()
		if pool.puts != len(data) {
			t.Fatalf("after release %d of %d buffers returned to the pool", pool.puts, len(data))
		}
	}
}

// TestCodecLeavesOtherMessages: anything but a rawMessage goes through
// gRPC's proto codec both ways.
func TestCodecLeavesOtherMessages(t *testing.T) {
	c := newCodec(nil)
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

// TestServerOptionsKeepOtherServices: with the sink's options (hostOptions, the forced
// codec) on the shared server, another service still answers through a
// real connection.
func TestServerOptionsKeepOtherServices(t *testing.T) {
	gs := grpc.NewServer(hostOptions()...)
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

// errNext is what refusingCodec answers.
var errNext = errors.New("the next codec")

// refusingCodec stands for the next codec: it answers everything with
// errNext, so a test sees which messages reach it.
type refusingCodec struct{ encoding.CodecV2 }

func (refusingCodec) Marshal(any) (mem.BufferSlice, error) { return nil, errNext }
func (refusingCodec) Unmarshal(mem.BufferSlice, any) error { return errNext }

// TestCodecHandsOtherMessagesToNext: with a next codec (xDS's on thaw's
// shared server), every message but a rawMessage goes to it both ways.
func TestCodecHandsOtherMessagesToNext(t *testing.T) {
	c := newCodec(refusingCodec{encoding.GetCodecV2("proto")})
	in := envoyMsg("node-1", ts(1), gauge("upstream_rq_active", demoCluster, 3))
	if _, err := c.Marshal(in); !errors.Is(err, errNext) {
		t.Errorf("Marshal: %v, want the next codec's answer", err)
	}
	data := mem.BufferSlice{mem.SliceBuffer([]byte{0x0a, 0x00})}
	if err := c.Unmarshal(data, &metricsv3.StreamMetricsMessage{}); !errors.Is(err, errNext) {
		t.Errorf("Unmarshal into a generated message: %v, want the next codec's answer", err)
	}
	var raw rawMessage
	if err := c.Unmarshal(data, &raw); err != nil {
		t.Errorf("Unmarshal into the sink's message went elsewhere: %v", err)
	}
	raw.release()
}
