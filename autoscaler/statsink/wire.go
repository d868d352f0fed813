package statsink

import (
	"encoding/binary"

	"google.golang.org/protobuf/encoding/protowire"
)

// Inlinable fast paths over protowire for the shapes Envoy writes: every
// field number thaw walks is below 16 (one-byte tags), and most lengths
// are below 16 KiB (one or two bytes). Anything else falls back to
// protowire, so the accepted input is exactly protowire's: a negative n
// means malformed, as from protowire.

// consumeTag is protowire.ConsumeTag.
func consumeTag(b []byte) (protowire.Number, protowire.Type, int) {
	if len(b) > 0 && b[0]-8 < 0x80-8 { // one byte, field number not 0
		return protowire.Number(b[0] >> 3), protowire.Type(b[0] & 7), 1
	}
	return protowire.ConsumeTag(b)
}

// consumeVarint is protowire.ConsumeVarint.
func consumeVarint(b []byte) (uint64, int) {
	if len(b) > 0 && b[0] < 0x80 {
		return uint64(b[0]), 1
	}
	return protowire.ConsumeVarint(b)
}

// consumeBytes is protowire.ConsumeBytes.
func consumeBytes(b []byte) ([]byte, int) {
	if len(b) > 0 && b[0] < 0x80 && int(b[0]) < len(b) {
		return b[1 : 1+b[0]], 1 + int(b[0])
	}
	return protowire.ConsumeBytes(b)
}

// consumeFixed64 is protowire.ConsumeFixed64.
func consumeFixed64(b []byte) (uint64, int) {
	if len(b) < 8 {
		return 0, -1
	}
	return binary.LittleEndian.Uint64(b), 8
}
