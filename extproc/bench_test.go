package extproc

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"
)

// BenchmarkDecisions measures complete ext_proc decisions per second over
// real gRPC on loopback, as Envoy makes them: open a stream, send request
// headers, receive the routing answer, half-close (request over), wait for
// the server to end the stream. Parallel clients share one connection, as
// Envoy's workers share the thaw_extproc cluster's HTTP/2 connection.
//
// With container concurrency 0 the server ends the stream right after the
// answer (ShortMode); with container concurrency > 0 it waits for Envoy's
// end of the stream (the request's end).
func BenchmarkDecisions(b *testing.B) {
	b.Run("cc=0", func(b *testing.B) { benchDecisions(b, newEnv(b, 5*time.Second), 0) })
	b.Run("cc=1000", func(b *testing.B) { benchDecisions(b, newEnv(b, 5*time.Second), 1000) })
	// With the header deadline tap and the request deadline (limits.go),
	// as thaw's shared server runs them.
	b.Run("cc=0/limits", func(b *testing.B) { benchDecisions(b, newEnvWith(b, 5*time.Second, Limits{}, true), 0) })
}

func benchDecisions(b *testing.B, e *env, cc int) {
	e.revision(demo, cc, time.Minute, 10000, "127.0.0.1", "127.0.0.2", "127.0.0.3", "127.0.0.4")
	// Only x-thaw-revision: the filter's forward_rules send nothing else.
	req := headers("x-thaw-revision", "default/demo")
	b.ReportAllocs()
	b.SetParallelism(16) // many concurrent streams, as under load
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		for pb.Next() {
			st, err := e.client.Process(ctx)
			if err != nil {
				b.Error(err)
				return
			}
			if err := st.Send(req); err != nil {
				b.Error(err)
				return
			}
			resp, err := st.Recv()
			if err != nil || resp.GetRequestHeaders() == nil {
				b.Errorf("answer %v, %v", resp, err)
				return
			}
			st.CloseSend()
			if _, err := st.Recv(); !errors.Is(err, io.EOF) {
				b.Errorf("stream end: %v", err)
				return
			}
		}
	})
}
