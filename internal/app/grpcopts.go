package app

import (
	"google.golang.org/grpc"
	"google.golang.org/grpc/experimental"

	"github.com/thaw-dev/thaw/autoscaler/statsink"
	"github.com/thaw-dev/thaw/extproc"
	"github.com/thaw-dev/thaw/xds"
)

// SharedGRPCServerOptions returns the options of thaw's one gRPC server
// that gRPC applies to the whole server, not to one service: it allows one
// codec, one buffer pool, one read buffer size and one receive limit per
// server. They are chosen here, for every service at once; what each
// service gets:
//
//   - Codec: statsink.NewCodec over xds.NewResponseCodec over gRPC's proto
//     codec. The stats sink (MetricsService) reads StreamMetrics in place
//     from the received frames; every other message goes down the chain.
//     xDS (ADS and the per-type services) marshals a response above
//     xds.MaxPooledResponse (1 MiB) into a buffer of its own, smaller ones
//     as gRPC's codec does. ext_proc, health and the Envoy Gateway
//     extension get gRPC's proto codec unchanged.
//   - Receive limit: statsink.MaxRecvMsgSize (64 MiB), for Envoy's stats
//     flushes at 10k+ revisions. xDS requests and ext_proc messages are
//     far smaller; the limit only bounds what a client may send any service.
//   - Read buffer: statsink.ServerReadBufferSize (1 MiB on Linux, taken from
//     gRPC's pool only while a connection has bytes to frame, so idle xDS
//     and ext_proc connections hold none).
//   - Buffer pool: statsink.NewBufferPool (gRPC's tiers without zeroing),
//     for the frames of every service's messages.
//   - Stream workers: extproc.GRPCServerOptions (max(32, 8 × GOMAXPROCS)
//     reused goroutines), for ext_proc's many short streams; long-lived
//     streams (ADS, stats) each keep one.
//
// New adds the per-instance options (stream limit, taps, keepalive,
// Options.GRPCServerOptions). Tests that host one service on a server of
// their own use these options to run the production path.
func SharedGRPCServerOptions() []grpc.ServerOption {
	opts := []grpc.ServerOption{
		grpc.ForceServerCodecV2(statsink.NewCodec(xds.NewResponseCodec(nil))),
		grpc.MaxRecvMsgSize(statsink.MaxRecvMsgSize),
		grpc.ReadBufferSize(statsink.ServerReadBufferSize()),
		experimental.BufferPool(statsink.NewBufferPool()),
	}
	return append(opts, extproc.GRPCServerOptions()...)
}
