package xds

import (
	"strings"
	"testing"

	"google.golang.org/grpc/encoding"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
)

// pooled reports whether freeing data returns its buffer to a pool: a
// SliceBuffer (unpooled) keeps its bytes after Free, a pooled buffer does
// not.
func pooled(data mem.BufferSlice) bool {
	for _, b := range data {
		if _, ok := b.(mem.SliceBuffer); !ok {
			return true
		}
	}
	return false
}

func TestResponseCodecPoolsOnlySmallResponses(t *testing.T) {
	big := &discoveryv3.DeltaDiscoveryResponse{Resources: []*discoveryv3.Resource{{Name: "a",
		Resource: &anypb.Any{TypeUrl: "t", Value: []byte(strings.Repeat("x", MaxPooledResponse))}}}}
	small := &discoveryv3.DeltaDiscoveryResponse{Resources: []*discoveryv3.Resource{{Name: "a",
		Resource: &anypb.Any{TypeUrl: "t", Value: []byte(strings.Repeat("x", 64<<10))}}}}
	bigSotW := &discoveryv3.DiscoveryResponse{VersionInfo: "1",
		Resources: []*anypb.Any{{TypeUrl: "t", Value: []byte(strings.Repeat("x", 2*MaxPooledResponse))}}}
	// Not an xDS response: always the proto codec's pooled buffer, however large.
	other := &discoveryv3.DeltaDiscoveryRequest{ResponseNonce: strings.Repeat("n", 2*MaxPooledResponse)}
	c := newResponseCodec(nil)
	for _, tc := range []struct {
		name   string
		msg    proto.Message
		pooled bool
	}{
		{"large delta response", big, false},
		{"large state-of-the-world response", bigSotW, false},
		{"small delta response", small, true},
		{"large other message", other, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data, err := c.Marshal(tc.msg)
			if err != nil {
				t.Fatal(err)
			}
			if got := pooled(data); got != tc.pooled {
				t.Errorf("pooled = %v, want %v", got, tc.pooled)
			}
			out := tc.msg.ProtoReflect().New().Interface()
			if err := c.Unmarshal(data, out); err != nil {
				t.Fatal(err)
			}
			if !proto.Equal(out, tc.msg) {
				t.Error("round trip changed the message")
			}
			data.Free()
		})
	}
	if c.Name() != "proto" {
		t.Errorf("name %q", c.Name())
	}
}

func TestResponseCodecRefusesInvalidMessage(t *testing.T) {
	c := newResponseCodec(nil)
	if _, err := c.Marshal("not a message"); err == nil {
		t.Error("a non-proto value marshalled")
	}
	var resp discoveryv3.DeltaDiscoveryResponse
	if err := c.Unmarshal(mem.BufferSlice{mem.SliceBuffer([]byte{0xff, 0xff})}, &resp); err == nil {
		t.Error("malformed bytes unmarshalled")
	}
}

// countingCodec is the proto codec, counting its uses.
type countingCodec struct {
	encoding.CodecV2
	marshals, unmarshals int
}

func (c *countingCodec) Marshal(v any) (mem.BufferSlice, error) {
	c.marshals++
	return c.CodecV2.Marshal(v)
}

func (c *countingCodec) Unmarshal(data mem.BufferSlice, v any) error {
	c.unmarshals++
	return c.CodecV2.Unmarshal(data, v)
}

// TestResponseCodecChainsToInner: everything but a large xDS response goes
// to the inner codec (the stats sink's, on thaw's shared server).
func TestResponseCodecChainsToInner(t *testing.T) {
	inner := &countingCodec{CodecV2: encoding.GetCodecV2("proto")}
	c := NewResponseCodec(inner)
	small := &discoveryv3.DeltaDiscoveryResponse{Nonce: "1"}
	big := &discoveryv3.DeltaDiscoveryResponse{Resources: []*discoveryv3.Resource{{Name: "a",
		Resource: &anypb.Any{TypeUrl: "t", Value: []byte(strings.Repeat("x", 2*MaxPooledResponse))}}}}
	for _, m := range []proto.Message{small, big} {
		data, err := c.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Unmarshal(data, &discoveryv3.DeltaDiscoveryResponse{}); err != nil {
			t.Fatal(err)
		}
	}
	if inner.marshals != 1 || inner.unmarshals != 2 {
		t.Errorf("inner codec marshalled %d and unmarshalled %d, want 1 (the small response) and 2", inner.marshals, inner.unmarshals)
	}
}
