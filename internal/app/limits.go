package app

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/grpc/tap"

	"github.com/thaw-dev/thaw/autoscaler/statsink"
	"github.com/thaw-dev/thaw/extproc"
	"github.com/thaw-dev/thaw/xds"
)

// Limits bound the state that clients of the gRPC port can make thaw keep
// (docs/security.md, "Bounds"). Zero fields take each component's default.
type Limits struct {
	// XDS bounds nodes, streams per node and the ACK timeout after which a
	// stalled stream is closed and excluded from confirmation.
	XDS xds.Limits
	// ExtProc bounds the wait for request headers and how long a routed
	// request keeps its slot.
	ExtProc extproc.Limits
	// StatSink bounds nodes, streams per node and clusters per node (Known
	// is set by the app from the registry).
	StatSink statsink.Limits
	// MaxStreamsPerConnection is the HTTP/2 concurrent-stream limit of the
	// shared gRPC server (default extproc.DefaultMaxStreamsPerConnection).
	MaxStreamsPerConnection uint32
}

// chainTaps returns an InTapHandle that runs each handle in order, each on
// the context the previous one returned; the first error refuses the
// stream. gRPC accepts a single InTapHandle per server.
func chainTaps(handles ...tap.ServerInHandle) grpc.ServerOption {
	return grpc.InTapHandle(func(ctx context.Context, info *tap.Info) (context.Context, error) {
		for _, h := range handles {
			var err error
			if ctx, err = h(ctx, info); err != nil {
				return ctx, err
			}
		}
		return ctx, nil
	})
}
