package statsink

import (
	"math"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	metricsv3 "github.com/envoyproxy/go-control-plane/envoy/service/metrics/v3"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/grpc/encoding"
	_ "google.golang.org/grpc/encoding/proto" // registers the "proto" codec
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
)

func marshal(t testing.TB, m proto.Message) []byte {
	t.Helper()
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestDecodeMatchesGeneratedTypes checks the hand-written field numbers
// against messages marshalled with the generated types.
func TestDecodeMatchesGeneratedTypes(t *testing.T) {
	msg := envoyMsg("node-1", 1234, gauge("upstream_rq_active", "rev_default_demo", 7))
	msg.EnvoyMetrics[0].Help = proto.String("help")
	msg.EnvoyMetrics[0].Metric[0].Label = append([]*dto.LabelPair{{Name: proto.String("envoy.other"), Value: proto.String("x")}},
		msg.EnvoyMetrics[0].Metric[0].Label...)
	raw := marshal(t, msg)

	// What gRPC's proto codec hands the sink: the message bytes as they are.
	var rm rawMessage
	if err := encoding.GetCodecV2("proto").Unmarshal(mem.BufferSlice{mem.SliceBuffer(raw)}, &rm); err != nil {
		t.Fatal(err)
	}
	if string(rm.b) != string(raw) {
		t.Fatalf("rawMessage holds %d bytes, want the %d message bytes", len(rm.b), len(raw))
	}

	id, err := nodeID(raw)
	if err != nil || id != "node-1" {
		t.Fatalf("nodeID = %q, %v; want node-1", id, err)
	}
	var p, c point
	if err := decodeMetric(marshal(t, msg.EnvoyMetrics[0].Metric[0]), fieldMetricGauge, &p); err != nil {
		t.Fatal(err)
	}
	if string(p.cluster) != "rev_default_demo" || p.value != 7 || !p.hasValue || p.timestampMs != 1234 {
		t.Fatalf("decodeMetric = %+v", p)
	}
	err = decodeMetric(marshal(t, &dto.Metric{Counter: &dto.Counter{Value: proto.Float64(9)}}), fieldMetricCounter, &c)
	if err != nil || c.value != 9 || !c.hasValue || c.cluster != nil {
		t.Fatalf("decodeMetric(counter) = %+v, %v", c, err)
	}
}

func TestNodeID(t *testing.T) {
	tests := []struct {
		name    string
		msg     *metricsv3.StreamMetricsMessage
		want    string
		wantErr bool
	}{
		{name: "present", msg: envoyMsg("a", 0), want: "a"},
		{name: "no identifier", msg: envoyMsg("", 0, gauge("upstream_rq_active", "x", 1))},
		{name: "identifier without node", msg: &metricsv3.StreamMetricsMessage{Identifier: &metricsv3.StreamMetricsMessage_Identifier{}}},
		{name: "empty id", msg: &metricsv3.StreamMetricsMessage{Identifier: &metricsv3.StreamMetricsMessage_Identifier{Node: &corev3.Node{Cluster: "c"}}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := nodeID(marshal(t, tc.msg))
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Fatalf("nodeID = %q, %v; want %q (error %v)", got, err, tc.want, tc.wantErr)
			}
		})
	}
	if _, err := nodeID([]byte{0x0a, 0x05, 0x01}); err == nil {
		t.Errorf("truncated message: want an error")
	}
}

func TestFamilyOf(t *testing.T) {
	tests := map[string]family{
		"cluster.upstream_rq_active":         familyActive,
		"cluster.upstream_rq_pending_active": familyPending,
		"cluster.upstream_rq_total":          familyTotal,
		"cluster.upstream_rq_active2":        familyOther,
		"cluster.rev_x.upstream_rq_active":   familyOther,
		"":                                   familyOther,
	}
	for name, want := range tests {
		if got := familyOf([]byte(name)); got != want {
			t.Errorf("familyOf(%q) = %v, want %v", name, got, want)
		}
	}
	// familyOf compares in pieces: any one byte changed, any prefix, and
	// any extension of the three names is another family.
	for name, want := range tests {
		if want == familyOther {
			continue
		}
		for i := range len(name) {
			b := []byte(name)
			b[i] ^= 0x20
			if got := familyOf(b); got != familyOther {
				t.Errorf("familyOf(%q) = %v, want familyOther", b, got)
			}
			if got := familyOf([]byte(name[:i])); got != familyOther {
				t.Errorf("familyOf(%q) = %v, want familyOther", name[:i], got)
			}
		}
		if got := familyOf([]byte(name + "_")); got != familyOther {
			t.Errorf("familyOf(%q) = %v, want familyOther", name+"_", got)
		}
	}
	if n := testing.AllocsPerRun(100, func() { familyOf([]byte("cluster.upstream_rq_total")) }); n != 0 {
		t.Errorf("familyOf allocates %v times", n)
	}
}

func TestDoubleFieldSpecialValues(t *testing.T) {
	for _, v := range []float64{0, -1, math.NaN(), math.Inf(1), 1e300} {
		got, err := doubleField(marshal(t, &dto.Gauge{Value: proto.Float64(v)}))
		if err != nil || (got != v && !(math.IsNaN(v) && math.IsNaN(got))) {
			t.Errorf("doubleField(%v) = %v, %v", v, got, err)
		}
	}
}
