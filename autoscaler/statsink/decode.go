package statsink

import (
	"errors"

	"google.golang.org/protobuf/encoding/protowire"
)

// Wire decoding of envoy.service.metrics.v3.StreamMetricsMessage without
// building the generated Go structs: Envoy sends one MetricFamily per stat
// (tens of thousands per flush at 10k revisions) and decoding them into
// generated types costs several allocations per metric. Field numbers below
// come from envoy/service/metrics/v3/metrics_service.proto and
// io/prometheus/client/metrics.proto; decode_test.go checks them against
// messages marshalled with the generated types.
const (
	fieldMsgIdentifier   protowire.Number = 1 // StreamMetricsMessage.identifier
	fieldMsgEnvoyMetrics protowire.Number = 2 // StreamMetricsMessage.envoy_metrics

	fieldIdentifierNode protowire.Number = 1 // Identifier.node
	fieldNodeID         protowire.Number = 1 // config.core.v3.Node.id

	fieldFamilyName   protowire.Number = 1 // MetricFamily.name
	fieldFamilyType   protowire.Number = 3 // MetricFamily.type
	fieldFamilyMetric protowire.Number = 4 // MetricFamily.metric

	fieldMetricLabel     protowire.Number = 1 // Metric.label
	fieldMetricGauge     protowire.Number = 2 // Metric.gauge
	fieldMetricCounter   protowire.Number = 3 // Metric.counter
	fieldMetricTimestamp protowire.Number = 6 // Metric.timestamp_ms

	fieldLabelName  protowire.Number = 1 // LabelPair.name
	fieldLabelValue protowire.Number = 2 // LabelPair.value

	fieldValue protowire.Number = 1 // Gauge.value, Counter.value
)

var errMalformed = errors.New("malformed protobuf")

// field is one decoded protobuf field: its number, wire type, the value's
// bytes (BytesType) or scalar (varint and fixed64).
type field struct {
	num    protowire.Number
	typ    protowire.Type
	bytes  []byte
	scalar uint64
}

// nextField reads the first field of b and returns it with the rest of b.
func nextField(b []byte) (f field, rest []byte, err error) {
	num, typ, n := consumeTag(b)
	if n < 0 {
		return f, nil, errMalformed
	}
	b = b[n:]
	f.num, f.typ = num, typ
	switch typ {
	case protowire.BytesType:
		v, m := consumeBytes(b)
		if m < 0 {
			return f, nil, errMalformed
		}
		f.bytes = v
		n = m
	case protowire.VarintType:
		v, m := consumeVarint(b)
		if m < 0 {
			return f, nil, errMalformed
		}
		f.scalar = v
		n = m
	case protowire.Fixed64Type:
		v, m := consumeFixed64(b)
		if m < 0 {
			return f, nil, errMalformed
		}
		f.scalar = v
		n = m
	default:
		n = protowire.ConsumeFieldValue(num, typ, b)
		if n < 0 {
			return f, nil, errMalformed
		}
	}
	return f, b[n:], nil
}

// nodeID returns Identifier.node.id from the first identifier field of a raw
// StreamMetricsMessage, or "" when there is none.
func nodeID(msg []byte) (string, error) { return nodeIDParts([][]byte{msg}) }

// nodeIDParts is nodeID of a message in consecutive parts.
func nodeIDParts(parts [][]byte) (string, error) {
	var r msgReader
	r.reset(parts)
	for r.more() {
		num, typ, v, err := r.next()
		if err != nil {
			return "", err
		}
		if num != fieldMsgIdentifier || typ != protowire.BytesType {
			continue
		}
		node, err := subField(v, fieldIdentifierNode)
		if err != nil || node == nil {
			return "", err
		}
		id, err := subField(node, fieldNodeID)
		return string(id), err
	}
	return "", nil
}

// subField returns the bytes of the last length-delimited field num in b
// (proto semantics: the last one wins), or nil.
func subField(b []byte, num protowire.Number) ([]byte, error) {
	var out []byte
	for len(b) > 0 {
		f, rest, err := nextField(b)
		if err != nil {
			return nil, err
		}
		b = rest
		if f.num == num && f.typ == protowire.BytesType {
			out = f.bytes
		}
	}
	return out, nil
}
