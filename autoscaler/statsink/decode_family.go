package statsink

import "google.golang.org/protobuf/encoding/protowire"

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
