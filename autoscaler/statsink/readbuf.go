package statsink

import (
	"os"
	"runtime"
	"strings"
)

// ReadBufferSize is the read buffer, in bytes, the server hosting the sink
// gives its connections (ServerReadBufferSize) (grpc.ReadBufferSize; gRPC's default is 32
// KiB): the most one read system call takes from a connection. An Envoy
// flush at 10k revisions is 5-6 MiB; with 1 MiB it arrives in a few dozen
// reads instead of about 180, which made ingestion through gRPC 10-25%
// cheaper per sample (BenchmarkIngestGRPC; docs/stats.md).
//
// On Linux gRPC takes the buffer from a pool when a connection is readable
// and returns it once its bytes are framed, so idle connections (xDS,
// ext_proc between requests) hold none and a small read reuses a pooled
// buffer. Elsewhere, or with that pooling turned off
// (GRPC_GO_EXPERIMENTAL_HTTP_FRAMER_READ_BUFFER_POOLING=false), every
// connection would keep its buffer for life, so ServerReadBufferSize keeps
// gRPC's default there.
const ReadBufferSize = 1 << 20

// grpcDefaultReadBufferSize is gRPC's own read buffer size.
const grpcDefaultReadBufferSize = 32 << 10

// ServerReadBufferSize returns the read buffer size, in bytes, for
// grpc.ReadBufferSize on the server hosting the sink: ReadBufferSize where
// gRPC pools read buffers (Linux, pooling not turned off), and gRPC's
// default (32 KiB) where it does not.
func ServerReadBufferSize() int {
	if runtime.GOOS != "linux" || strings.EqualFold(os.Getenv("GRPC_GO_EXPERIMENTAL_HTTP_FRAMER_READ_BUFFER_POOLING"), "false") {
		return grpcDefaultReadBufferSize
	}
	return ReadBufferSize
}
