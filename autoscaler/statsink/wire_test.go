package statsink

import (
	"bytes"
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
