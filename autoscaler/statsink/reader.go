package statsink

import (
	"google.golang.org/protobuf/encoding/protowire"
)

// msgReader walks the top-level fields of a StreamMetricsMessage that is
// split over several buffers (gRPC's received HTTP/2 frames, 16 KiB each)
// without gathering the message into one buffer: a field that lies in one
// buffer is returned in place, one that straddles buffers is copied into a
// scratch buffer (a MetricFamily is ~100 bytes, so that is about one field
// per frame).
type msgReader struct {
	bufs    [][]byte // unread bytes: bufs[0], then the others (in own)
	own     [][]byte // the reader's copy of the parts' slice headers
	left    int      // total unread bytes
	scratch []byte
	hdr     [20]byte // a tag and a length: two varints of at most 10 bytes
}

// reset starts reading parts, the message's bytes in order. The reader
// keeps the bytes of parts (not a copy) until the next reset, but never
// changes parts itself: it advances its own copy of the slice headers, so
// the caller can read the same parts again (the first message of a stream
// is read twice: its node id, then its metrics).
func (r *msgReader) reset(parts [][]byte) {
	clear(r.own)
	r.own = append(r.own[:0], parts...)
	r.bufs = r.own
	r.left = 0
	for _, p := range parts {
		r.left += len(p)
	}
}

// more reports whether unread bytes remain.
func (r *msgReader) more() bool { return r.left > 0 }

// next returns the next field: its number, wire type and, for a
// length-delimited field, its value. Fields of other types are skipped
// (v is nil). It returns errMalformed for bytes that are not wire format;
// the reader is then exhausted.
func (r *msgReader) next() (num protowire.Number, typ protowire.Type, v []byte, err error) {
	r.skipEmpty()
	// Fast path: a length-delimited field with a one-byte tag and a one- or
	// two-byte length, whole in the current buffer (almost every family).
	if len(r.bufs) > 0 {
		if b := r.bufs[0]; len(b) >= 2 && b[0]-8 < 0x78 && protowire.Type(b[0]&7) == protowire.BytesType {
			l, h, ok := int(b[1]), 2, true
			if l >= 0x80 {
				ok = len(b) >= 3 && b[2] < 0x80
				if ok {
					l, h = l&0x7f|int(b[2])<<7, 3
				}
			}
			if ok && l <= len(b)-h {
				r.bufs[0] = b[h+l:]
				r.left -= h + l
				return protowire.Number(b[0] >> 3), protowire.BytesType, b[h : h+l : h+l], nil
			}
		}
	}
	h := r.peek(len(r.hdr))
	num, typ, k := consumeTag(h)
	if k < 0 {
		return r.fail()
	}
	if typ != protowire.BytesType {
		// Not in StreamMetricsMessage: skip it on contiguous bytes.
		rest := r.takeRest()
		m := protowire.ConsumeFieldValue(num, typ, rest[k:])
		if m < 0 {
			return r.fail()
		}
		r.reset([][]byte{rest[k+m:]})
		return num, typ, nil, nil
	}
	l, m := protowire.ConsumeVarint(h[k:])
	if m < 0 || l > uint64(r.left-k-m) {
		return r.fail()
	}
	r.skip(k + m)
	return num, typ, r.take(int(l)), nil
}

func (r *msgReader) fail() (protowire.Number, protowire.Type, []byte, error) {
	r.bufs, r.left = nil, 0
	return 0, 0, nil, errMalformed
}

func (r *msgReader) skipEmpty() {
	for len(r.bufs) > 0 && len(r.bufs[0]) == 0 {
		r.bufs = r.bufs[1:]
	}
}

// peek returns up to n unread bytes without consuming them.
func (r *msgReader) peek(n int) []byte {
	n = min(n, r.left)
	if len(r.bufs) == 0 || len(r.bufs[0]) >= n {
		if len(r.bufs) == 0 {
			return nil
		}
		return r.bufs[0][:n]
	}
	k := 0
	for _, b := range r.bufs {
		if k == n {
			break
		}
		k += copy(r.hdr[k:n], b)
	}
	return r.hdr[:k]
}

// skip consumes n bytes (n <= r.left).
func (r *msgReader) skip(n int) {
	r.left -= n
	for n > 0 {
		if len(r.bufs[0]) > n {
			r.bufs[0] = r.bufs[0][n:]
			return
		}
		n -= len(r.bufs[0])
		r.bufs = r.bufs[1:]
	}
}

// take consumes n bytes (n <= r.left) and returns them contiguous: in
// place when they lie in one buffer, else copied into r.scratch (valid
// until the next take).
func (r *msgReader) take(n int) []byte {
	r.skipEmpty()
	if n == 0 {
		return []byte{}
	}
	if len(r.bufs[0]) >= n {
		v := r.bufs[0][:n:n]
		r.skip(n)
		return v
	}
	r.scratch = r.scratch[:0]
	for want := n; want > 0; {
		r.skipEmpty()
		c := min(want, len(r.bufs[0]))
		r.scratch = append(r.scratch, r.bufs[0][:c]...)
		want -= c
		r.skip(c)
	}
	return r.scratch
}

// takeRest consumes every unread byte and returns them contiguous.
func (r *msgReader) takeRest() []byte {
	r.skipEmpty()
	if len(r.bufs) == 1 {
		v := r.bufs[0]
		r.bufs, r.left = nil, 0
		return v
	}
	rest := make([]byte, 0, r.left)
	for _, b := range r.bufs {
		rest = append(rest, b...)
	}
	r.bufs, r.left = nil, 0
	return rest
}
