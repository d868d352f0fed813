package statsink

import (
	"encoding/binary"
	"errors"
	"math"

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

// io.prometheus.client.MetricType values.
const (
	typeCounter       = 0
	typeGauge         = 1
	typeMaxKnown      = 5 // GAUGE_HISTOGRAM
	familyTypeDefault = typeCounter
)

// Families thaw reads. With emit_tags_as_labels Envoy names the family after
// the tag-extracted stat name and puts the cluster in the label below.
const (
	familyRqActive        = familyPrefix + suffixActive
	familyRqPendingActive = familyPrefix + suffixPendingHead + suffixPendingTail
	familyRqTotal         = familyPrefix + suffixTotal
	labelClusterName      = "envoy.cluster_name"
)

// The family names in pieces of at most 16 bytes: the compiler compares a
// string with such a constant inline, with a longer one it calls the
// runtime's memequal (see familyOf).
const (
	familyPrefix      = "cluster.upstream"
	suffixActive      = "_rq_active"
	suffixTotal       = "_rq_total"
	suffixPendingHead = "_rq_pending"
	suffixPendingTail = "_active"
)

// family says which of the families thaw reads a MetricFamily is.
type family int

const (
	familyOther family = iota
	familyActive
	familyPending
	familyTotal
)

// familyOf compares without allocating (string(b) in a comparison does not
// copy), and only with constants of at most 16 bytes, which the compiler
// compares inline: a call to memequal per family was about 4% of the sink's
// CPU.
func familyOf(name []byte) family {
	if len(name) < len(familyRqTotal) || string(name[:len(familyPrefix)]) != familyPrefix {
		return familyOther
	}
	switch rest := name[len(familyPrefix):]; len(rest) {
	case len(suffixActive):
		if string(rest) == suffixActive {
			return familyActive
		}
	case len(suffixTotal):
		if string(rest) == suffixTotal {
			return familyTotal
		}
	case len(suffixPendingHead) + len(suffixPendingTail):
		if string(rest[:len(suffixPendingHead)]) == suffixPendingHead && string(rest[len(suffixPendingHead):]) == suffixPendingTail {
			return familyPending
		}
	}
	return familyOther
}

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

// point is one decoded Metric of a family thaw reads.
type point struct {
	cluster     []byte
	value       float64
	hasValue    bool
	timestampMs int64
}

// decodeMetric decodes a Metric into p, reading the value from the gauge or
// counter submessage (valueField) and the envoy.cluster_name label. p is an
// out-parameter rather than a result: returning the 48-byte point by value
// through two calls was about 7% of the CPU of decoding and recording a
// flush.
func decodeMetric(b []byte, valueField protowire.Number, p *point) (err error) {
	if envoyMetric(b, valueField, p) {
		return nil
	}
	*p, err = decodeMetricFields(b, valueField)
	return err
}

// envoyLabel is the start of the LabelPair Envoy writes first in every
// metric with emit_tags_as_labels: name "envoy.cluster_name", then the tag
// of the value field.
const envoyLabel = "\x0a\x12" + labelClusterName + "\x12"

// envoyLabel in two pieces of at most 16 bytes, compared inline (see
// familyOf).
const (
	envoyLabelHead = "\x0a\x12envoy.cluster_"
	envoyLabelTail = "name\x12"
)

// envoyMetric decodes a Metric laid out exactly as Envoy writes those thaw
// reads: the cluster label alone, the value as a 9-byte submessage, then
// timestamp_ms (optional). It compares bytes instead of walking fields, and
// gives up (false) on any other layout, which decodeMetricFields then reads;
// when true, it has set every field of *p to decodeMetricFields' result
// (FuzzEnvoyMetric). On false *p holds garbage.
func envoyMetric(b []byte, valueField protowire.Number, p *point) bool {
	if len(b) < 2 || b[0] != byte(fieldMetricLabel)<<3|byte(protowire.BytesType) || b[1] >= 0x80 || int(b[1]) > len(b)-2 {
		return false
	}
	label := b[2 : 2+b[1]]
	b = b[2+len(label):]
	const h = len(envoyLabel)
	if len(label) <= h || string(label[:len(envoyLabelHead)]) != envoyLabelHead ||
		string(label[len(envoyLabelHead):h]) != envoyLabelTail || int(label[h]) != len(label)-h-1 {
		return false // also rejects a value length of 128 or more (two bytes)
	}
	p.cluster = label[h+1:]
	if len(b) < 11 || b[0] != byte(valueField)<<3|byte(protowire.BytesType) || b[1] != 9 ||
		b[2] != byte(fieldValue)<<3|byte(protowire.Fixed64Type) {
		return false
	}
	p.value, p.hasValue = math.Float64frombits(binary.LittleEndian.Uint64(b[3:11])), true
	b = b[11:]
	if len(b) == 0 {
		p.timestampMs = 0
		return true
	}
	if b[0] != byte(fieldMetricTimestamp)<<3|byte(protowire.VarintType) {
		return false
	}
	v, ok := lastVarint(b[1:])
	if !ok {
		return false // malformed or more fields: the field walk decides
	}
	p.timestampMs = int64(v)
	return true
}

// lastVarint decodes b when it is exactly one varint of at most 9 bytes (63
// bits: a millisecond timestamp takes 6), as protowire.ConsumeVarint would,
// without a call. Anything else (a longer varint, bytes after it, a
// truncated one) is not ok and left to protowire.
func lastVarint(b []byte) (v uint64, ok bool) {
	if len(b) == 0 || len(b) > 9 || b[len(b)-1] >= 0x80 {
		return 0, false
	}
	for i, c := range b {
		v |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			return v, i == len(b)-1
		}
	}
	return 0, false
}

// decodeMetricFields is decodeMetric for any layout: a walk over the fields.
func decodeMetricFields(b []byte, valueField protowire.Number) (p point, err error) {
	for len(b) > 0 {
		num, wt, k := consumeTag(b)
		if k < 0 {
			return p, errMalformed
		}
		b = b[k:]
		switch {
		case wt == protowire.BytesType:
			v, m := consumeBytes(b)
			if m < 0 {
				return p, errMalformed
			}
			b = b[m:]
			switch num {
			case fieldMetricLabel:
				name, value, err := labelPair(v)
				if err != nil {
					return p, err
				}
				if string(name) == labelClusterName {
					p.cluster = value
				}
			case valueField:
				if p.value, err = doubleField(v); err != nil {
					return p, err
				}
				// A present but empty submessage means value 0 (proto default).
				p.hasValue = true
			}
		case num == fieldMetricTimestamp && wt == protowire.VarintType:
			v, m := consumeVarint(b)
			if m < 0 {
				return p, errMalformed
			}
			b = b[m:]
			p.timestampMs = int64(v)
		default:
			m := protowire.ConsumeFieldValue(num, wt, b)
			if m < 0 {
				return p, errMalformed
			}
			b = b[m:]
		}
	}
	return p, nil
}

func labelPair(b []byte) (name, value []byte, err error) {
	for len(b) > 0 {
		num, wt, k := consumeTag(b)
		if k < 0 {
			return nil, nil, errMalformed
		}
		b = b[k:]
		if wt != protowire.BytesType {
			m := protowire.ConsumeFieldValue(num, wt, b)
			if m < 0 {
				return nil, nil, errMalformed
			}
			b = b[m:]
			continue
		}
		v, m := consumeBytes(b)
		if m < 0 {
			return nil, nil, errMalformed
		}
		b = b[m:]
		switch num {
		case fieldLabelName:
			name = v
		case fieldLabelValue:
			value = v
		}
	}
	return name, value, nil
}

// doubleField reads field 1 (double) of a Gauge or Counter.
func doubleField(b []byte) (v float64, err error) {
	if len(b) == 9 && b[0] == byte(fieldValue)<<3|byte(protowire.Fixed64Type) { // as Envoy writes it
		return math.Float64frombits(binary.LittleEndian.Uint64(b[1:])), nil
	}
	for len(b) > 0 {
		f, rest, err := nextField(b)
		if err != nil {
			return 0, err
		}
		b = rest
		if f.num == fieldValue && f.typ == protowire.Fixed64Type {
			v = math.Float64frombits(f.scalar)
		}
	}
	return v, nil
}

// parseFamily walks a MetricFamily's fields: which family thaw reads it is
// (familyOther: none, decided by the first name field, which Envoy writes
// first, so the rest is not walked), its type, its first metric and how
// many metrics it has.
func parseFamily(b []byte) (fam family, typ uint64, metric []byte, metrics int, err error) {
	fam, typ = familyOther, familyTypeDefault
	var named bool
	for p := b; len(p) > 0; {
		num, wt, k := consumeTag(p)
		if k < 0 {
			return fam, typ, nil, 0, errMalformed
		}
		p = p[k:]
		switch {
		case num == fieldFamilyName && wt == protowire.BytesType:
			v, m := consumeBytes(p)
			if m < 0 {
				return fam, typ, nil, 0, errMalformed
			}
			p = p[m:]
			if !named {
				named, fam = true, familyOf(v)
				if fam == familyOther {
					return fam, typ, nil, 0, nil
				}
			}
		case num == fieldFamilyMetric && wt == protowire.BytesType:
			v, m := consumeBytes(p)
			if m < 0 {
				return fam, typ, nil, 0, errMalformed
			}
			p = p[m:]
			if metrics == 0 {
				metric = v
			}
			metrics++
		case num == fieldFamilyType && wt == protowire.VarintType:
			v, m := consumeVarint(p)
			if m < 0 {
				return fam, typ, nil, 0, errMalformed
			}
			p = p[m:]
			typ = v
		default:
			m := protowire.ConsumeFieldValue(num, wt, p)
			if m < 0 {
				return fam, typ, nil, 0, errMalformed
			}
			p = p[m:]
		}
	}
	return fam, typ, metric, metrics, nil
}

// envoyFamily is parseFamily for a family laid out as Envoy writes it: the
// name first and, for a family thaw reads, the type and one metric after
// it, nothing else, lengths of one byte. It compares bytes instead of
// walking fields and gives up (ok false) on any other layout; when ok, its
// result is parseFamily's (FuzzEnvoyFamily).
func envoyFamily(b []byte) (fam family, typ uint64, metric []byte, metrics int, ok bool) {
	const (
		tagName   = byte(fieldFamilyName)<<3 | byte(protowire.BytesType)
		tagType   = byte(fieldFamilyType)<<3 | byte(protowire.VarintType)
		tagMetric = byte(fieldFamilyMetric)<<3 | byte(protowire.BytesType)
	)
	if len(b) < 2 || b[0] != tagName || b[1] >= 0x80 || int(b[1]) > len(b)-2 {
		return familyOther, 0, nil, 0, false
	}
	fam = familyOf(b[2 : 2+b[1]])
	if fam == familyOther {
		return fam, familyTypeDefault, nil, 0, true
	}
	b = b[2+b[1]:]
	if len(b) < 4 || b[0] != tagType || b[1] >= 0x80 || b[2] != tagMetric || b[3] >= 0x80 || int(b[3]) != len(b)-4 {
		return familyOther, 0, nil, 0, false
	}
	return fam, uint64(b[1]), b[4:], 1, true
}
