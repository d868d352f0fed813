package statsink

import (
	"runtime"
	"testing"
)

// TestReadBufferSize: the large read buffer only where gRPC pools read
// buffers (Linux, pooling not turned off), gRPC's default elsewhere.
func TestReadBufferSize(t *testing.T) {
	want := grpcDefaultReadBufferSize
	if runtime.GOOS == "linux" {
		want = ReadBufferSize
	}
	if got := ServerReadBufferSize(); got != want {
		t.Errorf("ServerReadBufferSize() = %d on %s, want %d", got, runtime.GOOS, want)
	}
	t.Setenv("GRPC_GO_EXPERIMENTAL_HTTP_FRAMER_READ_BUFFER_POOLING", "False")
	if got := ServerReadBufferSize(); got != grpcDefaultReadBufferSize {
		t.Errorf("ServerReadBufferSize() = %d with gRPC's read buffer pooling off, want %d", got, grpcDefaultReadBufferSize)
	}
}
