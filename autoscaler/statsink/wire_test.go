package statsink

import (
	"bytes"
	"math"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
)

// FuzzWireMatchesProtowire: the inlined fast paths of wire.go accept and
// return exactly what protowire does, on any input (malformed included:
// both negative). `go test` runs the seeds: one- and two-byte tags and
// lengths, field number 0, truncated and overlong values.
func FuzzWireMatchesProtowire(f *testing.F) {
	for _, seed := range [][]byte{
		nil, {0x00}, {0x07}, {0x08, 0x01}, {0x12, 0x03, 'a', 'b', 'c'}, {0x12, 0x04, 'a'},
		{0x7f}, {0x80}, {0x80, 0x01}, {0x81, 0x00}, {0xff, 0x7f, 0x00}, {0x05, 0x80, 0x80},
		{0x09, 1, 2, 3, 4, 5, 6, 7, 8}, {0x09, 1, 2}, {0x90, 0x01, 0x02, 0x00, 0x00},
		append([]byte{0x7f}, bytes.Repeat([]byte{'x'}, 127)...), append([]byte{0x7f}, bytes.Repeat([]byte{'x'}, 126)...),
		append([]byte{0x80, 0x01}, bytes.Repeat([]byte{'y'}, 128)...),
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		num, typ, n := consumeTag(b)
		wNum, wTyp, wn := protowire.ConsumeTag(b)
		if (n < 0) != (wn < 0) || n >= 0 && (num != wNum || typ != wTyp || n != wn) {
			t.Fatalf("consumeTag(%x) = %d %d %d, protowire %d %d %d", b, num, typ, n, wNum, wTyp, wn)
		}
		v, n := consumeVarint(b)
		wv, wn := protowire.ConsumeVarint(b)
		if (n < 0) != (wn < 0) || n >= 0 && (v != wv || n != wn) {
			t.Fatalf("consumeVarint(%x) = %d %d, protowire %d %d", b, v, n, wv, wn)
		}
		bs, n := consumeBytes(b)
		wbs, wn := protowire.ConsumeBytes(b)
		if (n < 0) != (wn < 0) || n >= 0 && (!bytes.Equal(bs, wbs) || n != wn) {
			t.Fatalf("consumeBytes(%x) = %x %d, protowire %x %d", b, bs, n, wbs, wn)
		}
		fx, n := consumeFixed64(b)
		wfx, wn := protowire.ConsumeFixed64(b)
		if (n < 0) != (wn < 0) || n >= 0 && (fx != wfx || n != wn) {
			t.Fatalf("consumeFixed64(%x) = %d %d, protowire %d %d", b, fx, n, wfx, wn)
		}
		d, err := doubleField(b)
		wd, werr := slowDoubleField(b)
		if (err != nil) != (werr != nil) || err == nil && d != wd && !(d != d && wd != wd) {
			t.Fatalf("doubleField(%x) = %v %v, field walk %v %v", b, d, err, wd, werr)
		}
	})
}

// slowDoubleField is doubleField without its fast path.
func slowDoubleField(b []byte) (v float64, err error) {
	return doubleField(append([]byte{byte(fieldValue)<<3 | byte(protowire.VarintType), 0}, b...))
}

// FuzzMsgReader: msgReader over the message split at arbitrary points
// returns the same fields, and fails at the same field, as a walk over
// the contiguous bytes.
func FuzzMsgReader(f *testing.F) {
	f.Add(marshal(f, envoyMsg("n", ts(0), gauge("upstream_rq_active", demoCluster, 3), counter("upstream_rq_total", demoCluster, 10))), []byte{3, 40, 7})
	f.Add([]byte{0x12, 0x80, 0x01}, []byte{1, 1})
	f.Add([]byte{0x08, 0x96, 0x01, 0x12, 0x02, 'a', 'b', 0x19, 1, 2, 3, 4, 5, 6, 7, 8, 0x12, 0x00}, []byte{2, 1, 1, 5})
	f.Add([]byte{0x0b, 0x12, 0x01, 'x', 0x0c, 0x12, 0x01, 'y'}, []byte{1, 3})
	f.Add([]byte{0x12, 0x05, 'a'}, []byte{2})
	f.Fuzz(func(t *testing.T, msg, cuts []byte) {
		var parts [][]byte
		rest := msg
		for _, c := range cuts {
			k := min(int(c)%17, len(rest))
			parts = append(parts, rest[:k])
			rest = rest[k:]
		}
		parts = append(parts, rest)
		var r msgReader
		r.reset(parts)
		for want := msg; ; {
			if !r.more() {
				if len(want) != 0 {
					t.Fatalf("reader ended with %x left", want)
				}
				return
			}
			num, typ, v, err := r.next()
			f, next, wantErr := nextField(want)
			if (err != nil) != (wantErr != nil) {
				t.Fatalf("reader error %v, contiguous walk %v", err, wantErr)
			}
			if err != nil {
				return
			}
			if num != f.num || typ != f.typ || typ == protowire.BytesType && !bytes.Equal(v, f.bytes) {
				t.Fatalf("reader field %d/%d %x, contiguous %d/%d %x", num, typ, v, f.num, f.typ, f.bytes)
			}
			want = next
		}
	})
}

// FuzzEnvoyMetric: whenever the byte-compare fast path of decodeMetric
// accepts a Metric, the field walk decodes the same point from it.
func FuzzEnvoyMetric(f *testing.F) {
	for _, s := range []stat{gauge("upstream_rq_active", demoCluster, 3), counter("upstream_rq_total", demoCluster, 1e9),
		gauge("upstream_rq_active", "", 1), gauge("upstream_rq_active", string(bytes.Repeat([]byte{'c'}, 130)), 2)} {
		m := envoyMsg("", ts(1), s).EnvoyMetrics[0].Metric[0]
		f.Add(marshal(f, m), s.typ == 0)
		m.TimestampMs = nil
		f.Add(marshal(f, m), s.typ == 0)
	}
	f.Fuzz(func(t *testing.T, b []byte, counter bool) {
		field := fieldMetricGauge
		if counter {
			field = fieldMetricCounter
		}
		var p point
		if !envoyMetric(b, field, &p) {
			return
		}
		want, err := decodeMetricFields(b, field)
		if err != nil {
			t.Fatalf("fast path accepted %x, the field walk fails: %v", b, err)
		}
		if !bytes.Equal(p.cluster, want.cluster) || (p.cluster == nil) != (want.cluster == nil) ||
			math.Float64bits(p.value) != math.Float64bits(want.value) || p.hasValue != want.hasValue || p.timestampMs != want.timestampMs {
			t.Fatalf("fast path %+v, field walk %+v for %x", p, want, b)
		}
	})
}

// TestEnvoyMetricFastPath: the metrics Envoy sends (as the generated types
// marshal them, fields in number order) take the fast path.
func TestEnvoyMetricFastPath(t *testing.T) {
	for _, s := range []stat{gauge("upstream_rq_active", demoCluster, 3), counter("upstream_rq_total", demoCluster, 1e9)} {
		for _, tsMs := range []int64{0, ts(1)} {
			field := fieldMetricGauge
			if s.typ == 0 {
				field = fieldMetricCounter
			}
			b := marshal(t, envoyMsg("", tsMs, s).EnvoyMetrics[0].Metric[0])
			var p point
			ok := envoyMetric(b, field, &p)
			if !ok || string(p.cluster) != demoCluster || p.value != s.value || p.timestampMs != tsMs {
				t.Errorf("%s at %d: envoyMetric = %+v, %v", s.family, tsMs, p, ok)
			}
		}
	}
}

// FuzzEnvoyFamily: whenever the byte-compare fast path accepts a
// MetricFamily, parseFamily's walk reads the same from it.
func FuzzEnvoyFamily(f *testing.F) {
	for _, s := range []stat{gauge("upstream_rq_active", demoCluster, 3), counter("upstream_rq_total", demoCluster, 1e9),
		gauge("upstream_cx_active", demoCluster, 1), counter("upstream_rq_total", string(bytes.Repeat([]byte{'c'}, 130)), 2)} {
		f.Add(marshal(f, envoyMsg("", ts(1), s).EnvoyMetrics[0]))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		fam, typ, metric, metrics, ok := envoyFamily(b)
		if !ok {
			return
		}
		wFam, wTyp, wMetric, wMetrics, err := parseFamily(b)
		if err != nil || fam != wFam {
			t.Fatalf("fast path: family %d; walk: family %d, %v (%x)", fam, wFam, err, b)
		}
		if fam != familyOther && (typ != wTyp || !bytes.Equal(metric, wMetric) || metrics != wMetrics) {
			t.Fatalf("fast path %d %x %d, walk %d %x %d (%x)", typ, metric, metrics, wTyp, wMetric, wMetrics, b)
		}
	})
}

// TestEnvoyFamilyFastPath: families as Envoy sends them take the fast path.
func TestEnvoyFamilyFastPath(t *testing.T) {
	for _, s := range []stat{gauge("upstream_rq_active", demoCluster, 3), counter("upstream_rq_total", demoCluster, 1e9), gauge("upstream_cx_active", demoCluster, 1)} {
		if _, _, _, _, ok := envoyFamily(marshal(t, envoyMsg("", ts(1), s).EnvoyMetrics[0])); !ok {
			t.Errorf("%s: not on the fast path", s.family)
		}
	}
}
