package statsink

import (
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
)

// codec is the server's gRPC codec (ServerOptions forces it): it copies a
// StreamMetrics message straight from gRPC's received frames into the
// stream's reused rawMessage buffer, and hands every other message (xDS,
// ext_proc, health: everything else on the shared server) to gRPC's own
// proto codec unchanged.
//
// Why: gRPC's proto codec first gathers a multi-frame message into one
// buffer from its pool, which it zeroes on every Get (megabytes per Envoy
// flush at 10k revisions), then hands it to rawMessage.Unmarshal, which has
// to copy it again because the pooled buffer is freed on return. Here it is
// one copy into a buffer that lives as long as the stream.
type codec struct {
	proto encoding.CodecV2
}

var _ encoding.CodecV2 = codec{}

func newCodec() codec {
	return codec{proto: encoding.GetCodecV2(proto.Name)}
}

// Marshal is gRPC's proto codec's.
func (c codec) Marshal(v any) (mem.BufferSlice, error) { return c.proto.Marshal(v) }

// Unmarshal copies the message into a *rawMessage, or decodes anything else
// with gRPC's proto codec.
func (c codec) Unmarshal(data mem.BufferSlice, v any) error {
	m, ok := v.(*rawMessage)
	if !ok {
		return c.proto.Unmarshal(data, v)
	}
	n := data.Len()
	if cap(m.b) < n {
		m.b = make([]byte, n)
	}
	m.b = m.b[:n]
	data.CopyTo(m.b)
	return nil
}

// Name is "proto": the content-subtype gRPC clients, Envoy among them, send.
func (c codec) Name() string { return proto.Name }
