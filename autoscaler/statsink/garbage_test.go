package statsink

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	metricsv3 "github.com/envoyproxy/go-control-plane/envoy/service/metrics/v3"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/thaw-dev/thaw/autoscaler"
)

// rawCodec sends []byte messages as they are (to send malformed protobuf)
// and anything else as protobuf.
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) {
	if b, ok := v.([]byte); ok {
		return b, nil
	}
	return proto.Marshal(v.(proto.Message))
}
func (rawCodec) Unmarshal(data []byte, v any) error { return proto.Unmarshal(data, v.(proto.Message)) }
func (rawCodec) Name() string                       { return "proto" }

// TestBadInputKeepsStream sends one bad message after a good first message;
// the bad input must be counted under its reason and the next good message
// on the same stream must still be ingested.
func TestBadInputKeepsStream(t *testing.T) {
	const node = "envoy-1"
	withType := func(typ dto.MetricType, s stat) *metricsv3.StreamMetricsMessage {
		m := envoyMsg("", ts(2), s)
		m.EnvoyMetrics[0].Type = typ.Enum()
		return m
	}
	noLabel := envoyMsg("", ts(2), gauge("upstream_rq_active", "", 1))
	noValue := envoyMsg("", ts(2), gauge("upstream_rq_active", demoCluster, 1))
	noValue.EnvoyMetrics[0].Metric[0].Gauge = nil
	tests := []struct {
		name   string
		bad    any // *metricsv3.StreamMetricsMessage or raw []byte
		reason reason
		count  float64
		want   []autoscaler.Sample // from the bad message
	}{
		{name: "unknown metric type", bad: withType(dto.MetricType(42), gauge("upstream_rq_active", demoCluster, 1)),
			reason: reasonUnknownType, count: 1},
		{name: "gauge family sent as counter", bad: withType(dto.MetricType_COUNTER, counter("upstream_rq_active", demoCluster, 1)),
			reason: reasonWrongType, count: 1},
		{name: "metric without value", bad: noValue, reason: reasonWrongType, count: 1},
		{name: "NaN gauge", bad: envoyMsg("", ts(2), gauge("upstream_rq_active", demoCluster, math.NaN())),
			reason: reasonNotFinite, count: 1},
		{name: "infinite counter", bad: envoyMsg("", ts(2), counter("upstream_rq_total", demoCluster, math.Inf(1))),
			reason: reasonNotFinite, count: 1},
		{name: "negative gauge", bad: envoyMsg("", ts(2), gauge("upstream_rq_active", demoCluster, -3), gauge("upstream_rq_pending_active", demoCluster, 1)),
			reason: reasonNegative, count: 1, want: []autoscaler.Sample{sample(node, demo, 2, 1, 0)}},
		{name: "no cluster label", bad: noLabel, reason: reasonNoClusterLabel, count: 1},
		{name: "timestamp far off uses receive time", bad: envoyMsg("", ts(7200), gauge("upstream_rq_active", demoCluster, 2)),
			reason: reasonTimestamp, count: 1, want: []autoscaler.Sample{sample(node, demo, 0, 2, 0)}},
		// A family whose name claims 127 bytes but has 1: the families
		// before it count, the rest of the message is skipped.
		{name: "malformed family", bad: append(marshal(t, envoyMsg("", ts(2), gauge("upstream_rq_active", demoCluster, 2))),
			0x12, 0x03, 0x0a, 0x7f, 0x01),
			reason: reasonMalformed, count: 1, want: []autoscaler.Sample{sample(node, demo, 2, 2, 0)}},
		// A top-level field claiming 127 bytes with 1 left: same.
		{name: "malformed message", bad: append(marshal(t, envoyMsg("", ts(2), gauge("upstream_rq_active", demoCluster, 2))),
			0x12, 0x7f, 0x01),
			reason: reasonMalformed, count: 1, want: []autoscaler.Sample{sample(node, demo, 2, 2, 0)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env := startSink(t)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			st, err := env.client.StreamMetrics(ctx, grpc.ForceCodec(rawCodec{}))
			if err != nil {
				t.Fatal(err)
			}
			env.send(t, st, envoyMsg(node, ts(1), gauge("upstream_rq_active", demoCluster, 1)))
			checkSamples(t, "first", env.rec.take(), []autoscaler.Sample{sample(node, demo, 1, 1, 0)})

			if b, ok := tc.bad.([]byte); ok {
				sendRaw(t, env, st, b)
			} else {
				env.send(t, st, tc.bad.(*metricsv3.StreamMetricsMessage))
			}
			if got := env.bad(tc.reason); got != tc.count {
				t.Errorf("bad_input_total{reason=%q} = %v, want %v", tc.reason, got, tc.count)
			}
			checkSamples(t, "bad", env.rec.take(), tc.want)

			env.send(t, st, envoyMsg("", ts(3), gauge("upstream_rq_active", demoCluster, 5)))
			checkSamples(t, "after", env.rec.take(), []autoscaler.Sample{sample(node, demo, 3, 5, 0)})
		})
	}
}

func sendRaw(t *testing.T, env *sinkEnv, st metricsStream, b []byte) {
	t.Helper()
	before := testutil.ToFloat64(env.sink.m.messages)
	if err := st.SendMsg(b); err != nil {
		t.Fatalf("send raw: %v", err)
	}
	waitFor(t, "raw message processed", func() bool { return testutil.ToFloat64(env.sink.m.messages) > before })
}

func TestFirstMessageWithoutIdentifierEndsStream(t *testing.T) {
	env := startSink(t)
	st := env.open(t)
	if err := st.Send(envoyMsg("", ts(1), gauge("upstream_rq_active", demoCluster, 1))); err != nil {
		t.Fatal(err)
	}
	_, err := st.CloseAndRecv()
	if status.Code(err) != codes.InvalidArgument {
		t.Fatalf("CloseAndRecv = %v, want InvalidArgument", err)
	}
	if got := env.bad(reasonNoIdentifier); got != 1 {
		t.Errorf("bad_input_total{reason=no_identifier} = %v, want 1", got)
	}
	checkSamples(t, "rejected", env.rec.take(), nil)
	// Envoy reconnects and sends the identifier: that stream works.
	env.send(t, env.open(t), envoyMsg("envoy-1", ts(2), gauge("upstream_rq_active", demoCluster, 1)))
	checkSamples(t, "reconnected", env.rec.take(), []autoscaler.Sample{sample("envoy-1", demo, 2, 1, 0)})
}

func TestOversizedMessage(t *testing.T) {
	const limit = 64 << 10
	env := startSink(t, grpc.MaxRecvMsgSize(limit))
	st := env.open(t)
	env.send(t, st, envoyMsg("envoy-1", ts(1), gauge("upstream_rq_active", demoCluster, 1)))
	env.rec.take()
	big := envoyMsg("", ts(2), gauge("upstream_rq_active", demoCluster, 1))
	big.EnvoyMetrics[0].Help = proto.String(string(bytes.Repeat([]byte("x"), 2*limit)))
	if err := st.Send(big); err != nil {
		t.Fatal(err)
	}
	_, err := st.CloseAndRecv()
	if status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("CloseAndRecv = %v, want ResourceExhausted", err)
	}
	waitFor(t, "oversized counted", func() bool { return env.bad(reasonOversized) == 1 })
	checkSamples(t, "oversized", env.rec.take(), nil)
}

// TestLargeIdentifierSpanningFrames: a real Envoy's first message carries a
// node of ~60 KB (every extension it was built with), so the identifier
// spans several gRPC frames. Reading the node id must not consume the parts
// the metrics are then read from: the first flush's samples arrive and
// nothing is counted as malformed.
func TestLargeIdentifierSpanningFrames(t *testing.T) {
	env := startSink(t)
	st := env.open(t)
	msg := envoyMsg("envoy-1", ts(1), gauge("upstream_rq_active", demoCluster, 2))
	for i := range 2000 {
		msg.Identifier.Node.Extensions = append(msg.Identifier.Node.Extensions,
			&corev3.Extension{Name: fmt.Sprintf("envoy.extension.number_%04d", i), Category: "envoy.filters.http"})
	}
	if size := proto.Size(msg.Identifier); size < 64<<10 {
		t.Fatalf("identifier is %d bytes, want more than 4 frames of 16 KiB", size)
	}
	env.send(t, st, msg)
	if got := env.bad(reasonMalformed); got != 0 {
		t.Errorf("bad_input_total{reason=malformed} = %v, want 0", got)
	}
	checkSamples(t, "first flush", env.rec.take(), []autoscaler.Sample{sample("envoy-1", demo, 1, 2, 0)})
}
