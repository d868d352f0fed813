package statsink

import (
	"google.golang.org/grpc"
	"google.golang.org/grpc/experimental"
)

// hostOptions are the server options internal/app sets on thaw's shared
// gRPC server for the sink (app.SharedGRPCServerOptions, which tests
// outside this package use; importing it here would be a cycle), so the
// sink's tests and benchmarks run the production path.
func hostOptions() []grpc.ServerOption {
	return []grpc.ServerOption{grpc.MaxRecvMsgSize(MaxRecvMsgSize), grpc.ReadBufferSize(ServerReadBufferSize()),
		grpc.ForceServerCodecV2(NewCodec(nil)), experimental.BufferPool(NewBufferPool())}
}
