package statsink

import (
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
)

// codec is the server's gRPC codec (NewCodec; the server hosting the sink
// forces it with grpc.ForceServerCodecV2): it hands a StreamMetrics message
// to the sink as gRPC received it, a reference to its HTTP/2 frame buffers
// (rawMessage.hold), and every other message (xDS, ext_proc, health:
// everything else on the shared server) to the next codec, gRPC's own
// proto codec unless NewCodec was given another.
//
// Why: gRPC's proto codec first gathers a multi-frame message into one
// buffer from its pool, which it zeroes on every Get (megabytes per Envoy
// flush at 10k revisions), then hands it to rawMessage.Unmarshal, which has
// to copy it again because the pooled buffer is freed on return; and each
// stream then keeps a buffer as large as its largest flush. Here the frames
// are read in place and go back to gRPC's pool after each message.
type codec struct {
	proto encoding.CodecV2
}

var _ encoding.CodecV2 = codec{}

// NewCodec returns the gRPC codec the server hosting the sink needs
// (grpc.ForceServerCodecV2): StreamMetrics messages are read in place,
// every other message goes to next (nil: gRPC's proto codec). A server has
// one codec: other services that need their own layer (xds) are passed as
// next.
func NewCodec(next encoding.CodecV2) encoding.CodecV2 { return newCodec(next) }

// newCodec returns the codec with next for other messages (nil: gRPC's
// proto codec).
func newCodec(next encoding.CodecV2) codec {
	if next == nil {
		next = encoding.GetCodecV2(proto.Name)
	}
	return codec{proto: next}
}

// Marshal is gRPC's proto codec's.
func (c codec) Marshal(v any) (mem.BufferSlice, error) { return c.proto.Marshal(v) }

// Unmarshal holds data in a *rawMessage, or decodes anything else with
// gRPC's proto codec.
func (c codec) Unmarshal(data mem.BufferSlice, v any) error {
	m, ok := v.(*rawMessage)
	if !ok {
		return c.proto.Unmarshal(data, v)
	}
	m.hold(data)
	return nil
}

// Name is "proto": the content-subtype gRPC clients, Envoy among them, send.
func (c codec) Name() string { return proto.Name }
