package statsink

import (
	"encoding/binary"
	"math"

	"google.golang.org/protobuf/encoding/protowire"
)

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
