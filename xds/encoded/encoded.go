package encoded

import (
	"fmt"

	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
)

// Resource is a resource kept as its deterministic encoding and version
// only. The memoised translator (xds/memo) holds revisions' clusters and
// virtual hosts this way: the protos cost ~1.8 KiB per revision in Go (a
// RouteAction alone is ~0.5 KiB), 18 MB at 10,000 revisions, next to
// encodings the delta caches keep anyway. The server then compares
// versions instead of messages, and the delta caches (xds/cache) share
// bytes and version with the memo. Never modify Bytes.
type Resource struct {
	Bytes   []byte // deterministic encoding, as Hash
	Version string // cachev3.HashResource(Bytes)
	// lazy, when set, computes both on first need (NewLazy; Get).
	lazy *lazy
}

// Encode returns r's encoding and version.
func Encode(r types.Resource) (*Resource, error) {
	b, v, err := Hash(r)
	if err != nil {
		return nil, err
	}
	return &Resource{Bytes: b, Version: v}, nil
}

// Hash returns a resource's deterministic encoding and the version
// go-control-plane's delta protocol gives it: the SHA-256 of that
// encoding. The error wraps the marshalling error.
func Hash(r types.Resource) ([]byte, string, error) {
	b, err := cachev3.MarshalResource(r)
	if err != nil {
		return nil, "", fmt.Errorf("marshal %s: %w", cachev3.GetResourceName(r), err)
	}
	return b, cachev3.HashResource(b), nil
}

// Decode returns a new message of typeURL decoded from b: for the
// state-of-the-world cache, which needs messages, when a delta cache holds
// a resource as encoding only.
func Decode(typeURL string, b []byte) (types.Resource, error) {
	m, err := anypb.UnmarshalNew(&anypb.Any{TypeUrl: typeURL, Value: b}, proto.UnmarshalOptions{})
	if err != nil {
		return nil, fmt.Errorf("decode %s: %w", ShortType(typeURL), err)
	}
	return m, nil
}

// typeNames maps type URLs to the short names status output uses.
var typeNames = map[string]string{
	resourcev3.ListenerType:    "listeners",
	resourcev3.RouteType:       "routes",
	resourcev3.ClusterType:     "clusters",
	resourcev3.EndpointType:    "endpoints",
	resourcev3.VirtualHostType: "virtualhosts",
}

// ShortType returns the short name of a type URL ("endpoints"), or the URL.
func ShortType(typeURL string) string {
	if n, ok := typeNames[typeURL]; ok {
		return n
	}
	return typeURL
}
