package xds

import (
	"fmt"

	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
)

// encodedResource is a resource kept as its deterministic encoding and
// version only. The translator the server keeps holds revisions' clusters
// and virtual hosts this way (translator.encode): the protos cost ~1.8 KiB
// per revision in Go (a RouteAction alone is ~0.5 KiB), 18 MB at 10,000
// revisions, next to encodings the delta caches keep anyway. The server
// then compares versions instead of messages, and the delta caches share
// bytes and version with the memo.
type encodedResource struct {
	bytes   []byte // deterministic encoding, as hashOf
	version string // HashResource(bytes)
}

// encode returns r's encoding and version.
func encode(r types.Resource) (*encodedResource, error) {
	b, v, err := hashOf(r)
	if err != nil {
		return nil, err
	}
	return &encodedResource{bytes: b, version: v}, nil
}

// decode returns a new message of typeURL decoded from b: for the
// state-of-the-world cache, which needs messages, when a delta cache holds
// a resource as encoding only.
func decode(typeURL string, b []byte) (types.Resource, error) {
	m, err := anypb.UnmarshalNew(&anypb.Any{TypeUrl: typeURL, Value: b}, proto.UnmarshalOptions{})
	if err != nil {
		return nil, fmt.Errorf("decode %s: %w", shortType(typeURL), err)
	}
	return m, nil
}
