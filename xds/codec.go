package xds

import (
	"fmt"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc/encoding"
	_ "google.golang.org/grpc/encoding/proto" // registers the "proto" codec wrapped below
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
)

// MaxPooledResponse is the largest xDS response (bytes, marshalled) whose
// buffer thaw's gRPC server returns to gRPC's buffer pool once it is sent:
// 1 MiB, the largest tier of gRPC's default pool.
const MaxPooledResponse = 1 << 20

// responseCodec is its inner codec (gRPC's proto codec, or the stats
// sink's on thaw's shared server), except that an xDS response larger
// than MaxPooledResponse is marshalled into a buffer of its own, left to
// the garbage collector once sent. gRPC's codec takes every buffer above
// 1 KiB from its default pool and puts it back after the write; the only
// messages above 1 MiB are the responses of an Envoy's initial sync (12.4
// MB at 10,000 revisions, 128 MiB at 100,000 in heap profiles of
// `thaw local`), and kept in the pool they stayed in the heap until two
// garbage collections later, which an idle control plane may not run for
// minutes. Every other message (ext_proc, stats, small xDS responses)
// goes through the inner codec unchanged.
type responseCodec struct {
	inner encoding.CodecV2
}

// Name is the inner codec's content subtype ("proto").
func (c responseCodec) Name() string { return c.inner.Name() }

// Marshal encodes v; see responseCodec.
func (c responseCodec) Marshal(v any) (mem.BufferSlice, error) {
	switch m := v.(type) {
	case *discoveryv3.DeltaDiscoveryResponse, *discoveryv3.DiscoveryResponse:
		pm := m.(proto.Message)
		if proto.Size(pm) > MaxPooledResponse {
			b, err := proto.MarshalOptions{UseCachedSize: true}.Marshal(pm)
			if err != nil {
				return nil, fmt.Errorf("marshal %T: %w", v, err)
			}
			return mem.BufferSlice{mem.SliceBuffer(b)}, nil
		}
	}
	return c.inner.Marshal(v)
}

// Unmarshal decodes data into v with the inner codec.
func (c responseCodec) Unmarshal(data mem.BufferSlice, v any) error {
	return c.inner.Unmarshal(data, v)
}

// NewResponseCodec returns the codec the server the xDS server is
// registered on should use (grpc.ForceServerCodecV2, or as another
// codec's next one): inner (nil: gRPC's proto codec), except that large
// xDS responses are marshalled into unpooled buffers (see responseCodec).
func NewResponseCodec(inner encoding.CodecV2) encoding.CodecV2 {
	return newResponseCodec(inner)
}

func newResponseCodec(inner encoding.CodecV2) responseCodec {
	if inner == nil {
		inner = encoding.GetCodecV2("proto")
	}
	return responseCodec{inner: inner}
}
