package statsink

import (
	"context"
	"fmt"
	"net"
	"sort"
	"sync"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	metricsv3 "github.com/envoyproxy/go-control-plane/envoy/service/metrics/v3"
	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/thaw-dev/thaw/autoscaler"
)

// t0 is the fake clock's start; Envoy timestamps in tests are t0 + seconds.
var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// fakeRecorder keeps every sample.
type fakeRecorder struct {
	mu      sync.Mutex
	samples []autoscaler.Sample
}

func (r *fakeRecorder) Record(s autoscaler.Sample) {
	r.mu.Lock()
	r.samples = append(r.samples, s)
	r.mu.Unlock()
}

// take returns the samples recorded since the previous take, sorted by
// source, revision and time.
func (r *fakeRecorder) take() []autoscaler.Sample {
	r.mu.Lock()
	out := r.samples
	r.samples = nil
	r.mu.Unlock()
	sortSamples(out)
	return out
}

var _ autoscaler.Recorder = (*fakeRecorder)(nil)

func sortSamples(s []autoscaler.Sample) {
	sort.Slice(s, func(i, j int) bool {
		a, b := s[i], s[j]
		if a.Source != b.Source {
			return a.Source < b.Source
		}
		if a.Revision != b.Revision {
			return a.Revision.String() < b.Revision.String()
		}
		return a.Time.Before(b.Time)
	})
}

// sinkEnv is a sink served by a real gRPC server on 127.0.0.1 and a real
// client connection to it.
type sinkEnv struct {
	sink   *Server
	rec    *fakeRecorder
	clock  *clocktesting.FakeClock
	client metricsv3.MetricsServiceClient
	conn   *grpc.ClientConn
}

func startSink(t *testing.T, serverOpts ...grpc.ServerOption) *sinkEnv {
	t.Helper()
	return startSinkWith(t, Limits{}, serverOpts...)
}

// startSinkWith is startSink with limits.
func startSinkWith(t *testing.T, lim Limits, serverOpts ...grpc.ServerOption) *sinkEnv {
	t.Helper()
	env := &sinkEnv{rec: &fakeRecorder{}, clock: clocktesting.NewFakeClock(t0)}
	env.sink = New(Options{Recorder: env.rec, Clock: env.clock, NodeExpiry: 10 * time.Second, Limits: lim})
	if len(serverOpts) == 0 {
		serverOpts = hostOptions()
	}
	gs := grpc.NewServer(serverOpts...)
	env.sink.Register(gs)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go gs.Serve(ln)
	t.Cleanup(gs.Stop)
	env.conn, err = grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { env.conn.Close() })
	env.client = metricsv3.NewMetricsServiceClient(env.conn)
	return env
}

type metricsStream = grpc.ClientStreamingClient[metricsv3.StreamMetricsMessage, metricsv3.StreamMetricsResponse]

// open starts a stream; the caller sends the identifier with the first message.
func (env *sinkEnv) open(t *testing.T) metricsStream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	st, err := env.client.StreamMetrics(ctx)
	if err != nil {
		t.Fatalf("open stream: %v", err)
	}
	return st
}

// send sends msg and waits (bounded) until the sink processed it.
func (env *sinkEnv) send(t *testing.T, st metricsStream, msg *metricsv3.StreamMetricsMessage) {
	t.Helper()
	before := testutil.ToFloat64(env.sink.m.messages)
	if err := st.Send(msg); err != nil {
		t.Fatalf("send: %v", err)
	}
	waitFor(t, "message processed", func() bool { return testutil.ToFloat64(env.sink.m.messages) > before })
}

// bad returns thaw_statsink_bad_input_total for reason r.
func (env *sinkEnv) bad(r reason) float64 { return testutil.ToFloat64(env.sink.m.badInput[r]) }

// waitFor polls cond every millisecond for at most 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for range 10000 {
		if cond() {
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s", what)
}

// stat is one Envoy stat as the metrics_service sink sends it with
// emit_tags_as_labels: one MetricFamily per stat, named after the
// tag-extracted name, the cluster in label envoy.cluster_name.
type stat struct {
	family  string
	typ     dto.MetricType
	cluster string
	value   float64
}

func gauge(family, cluster string, v float64) stat {
	return stat{family: "cluster." + family, typ: dto.MetricType_GAUGE, cluster: cluster, value: v}
}

func counter(family, cluster string, v float64) stat {
	return stat{family: "cluster." + family, typ: dto.MetricType_COUNTER, cluster: cluster, value: v}
}

// envoyMsg builds a StreamMetricsMessage like Envoy's: identifier only when
// nodeID is not empty, every metric stamped with tsMs (0: no timestamp).
func envoyMsg(nodeID string, tsMs int64, stats ...stat) *metricsv3.StreamMetricsMessage {
	msg := &metricsv3.StreamMetricsMessage{}
	if nodeID != "" {
		msg.Identifier = &metricsv3.StreamMetricsMessage_Identifier{Node: &corev3.Node{Id: nodeID, Cluster: "thaw"}}
	}
	for _, s := range stats {
		m := &dto.Metric{}
		if tsMs != 0 {
			m.TimestampMs = proto.Int64(tsMs)
		}
		if s.cluster != "" {
			m.Label = []*dto.LabelPair{{Name: proto.String(labelClusterName), Value: proto.String(s.cluster)}}
		}
		switch s.typ {
		case dto.MetricType_GAUGE:
			m.Gauge = &dto.Gauge{Value: proto.Float64(s.value)}
		case dto.MetricType_COUNTER:
			m.Counter = &dto.Counter{Value: proto.Float64(s.value)}
		default:
			m.Untyped = &dto.Untyped{Value: proto.Float64(s.value)}
		}
		msg.EnvoyMetrics = append(msg.EnvoyMetrics, &dto.MetricFamily{
			Name: proto.String(s.family), Type: s.typ.Enum(), Metric: []*dto.Metric{m}})
	}
	return msg
}

// ts returns Envoy's timestamp_ms for t0 + sec seconds.
func ts(sec int) int64 { return t0.Add(time.Duration(sec) * time.Second).UnixMilli() }

// at returns t0 + sec seconds.
func at(sec int) time.Time { return t0.Add(time.Duration(sec) * time.Second) }

func checkSamples(t *testing.T, step string, got, want []autoscaler.Sample) {
	t.Helper()
	sortSamples(want)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("%s: samples (-want +got):\n%s", step, diff)
	}
}

func nodeName(i int) string { return fmt.Sprintf("envoy-%d", i) }
