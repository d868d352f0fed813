//go:build e2e

package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/thaw-dev/thaw/e2e/harness"
	"github.com/thaw-dev/thaw/extproc"
)

// TestActivatorFailsClosedWith503: with the ext_proc service gone, Envoy
// answers 503 (status_on_error), never 500, and never reaches a backend.
func TestActivatorFailsClosedWith503(t *testing.T) {
	e := actStart(t, "demo")
	key := e.revision(t, "demo", 0, 10*time.Second, 10)
	b := actStartBackend(t, "b1", 0)
	e.setBackends(key, b)
	if r := e.get(context.Background(), "demo.example.com", nil); r.err != nil || r.code != 200 {
		t.Fatalf("before stopping the server: %d %q %v", r.code, r.body, r.err)
	}
	e.grpc.Stop()
	for i := 0; i < 3; i++ {
		r := e.get(context.Background(), "demo.example.com", nil)
		if r.err != nil || r.code != http.StatusServiceUnavailable {
			t.Fatalf("ext_proc service gone, request %d: %d %q %v; want 503", i, r.code, r.body, r.err)
		}
	}
	if got := b.served.Load(); got != 1 {
		t.Fatalf("backend served %d requests, want only the first", got)
	}
}

// shortServer is a raw ext_proc server: it answers request headers with the
// backend and a mode_override to extproc.ShortMode, then keeps reading and
// reports how the stream ended. It shows what Envoy itself does with the
// override (thaw's server returns at once instead).
type shortServer struct {
	extprocv3.UnimplementedExternalProcessorServer
	dest  string
	ended chan error
}

func (s *shortServer) Process(st extprocv3.ExternalProcessor_ProcessServer) error {
	if _, err := st.Recv(); err != nil {
		return err
	}
	md, err := structpb.NewStruct(map[string]any{extproc.MetadataNamespace: map[string]any{extproc.MetadataField: s.dest}})
	if err != nil {
		return err
	}
	err = st.Send(&extprocv3.ProcessingResponse{
		Response: &extprocv3.ProcessingResponse_RequestHeaders{RequestHeaders: &extprocv3.HeadersResponse{
			Response: &extprocv3.CommonResponse{Status: extprocv3.CommonResponse_CONTINUE}}},
		DynamicMetadata: md,
		ModeOverride:    extproc.ShortMode(),
	})
	if err != nil {
		return err
	}
	for {
		if _, err := st.Recv(); err != nil {
			s.ended <- err
			return nil
		}
		s.ended <- errors.New("unexpected message after the answer")
	}
}

// TestEnvoyClosesShortModeStream: Envoy 1.40 accepts the activator's
// mode_override (allow_mode_override with that one mode allowed) and ends
// the ext_proc stream right after the answer, while the response is still
// streaming: with container concurrency 0 a request costs one round trip.
func TestEnvoyClosesShortModeStream(t *testing.T) {
	b := actStartBackend(t, "slow", 0)
	b.gate = make(chan struct{})
	srv := &shortServer{dest: b.ln.Addr().String(), ended: make(chan error, 4)}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer()
	extprocv3.RegisterExternalProcessorServer(g, srv)
	go g.Serve(ln)
	t.Cleanup(g.Stop)
	port := harness.PickPort(t)
	harness.StartEnvoy(t, harness.EnvoyOptions{
		Bootstrap: actBootstrap(port, ln.Addr().(*net.TCPAddr).Port, actHoldBudget, []string{"demo"}),
	})
	c := &http.Client{Timeout: 30 * time.Second}
	req, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/", port), nil)
	req.Host = "demo.example.com"
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("x-backend") != "slow" {
		t.Fatalf("got %d from %q, want 200 from slow", resp.StatusCode, resp.Header.Get("x-backend"))
	}
	select {
	case err := <-srv.ended:
		if !errors.Is(err, io.EOF) && !strings.Contains(err.Error(), "context canceled") && !strings.Contains(err.Error(), "Canceled") {
			t.Fatalf("ext_proc stream ended with %v, want EOF or cancellation from Envoy", err)
		}
		if n := b.current.Load(); n != 1 {
			t.Fatalf("the ext_proc stream ended with the request (backend has %d in flight), not right after the answer", n)
		}
		t.Logf("Envoy ended the ext_proc stream while the response was streaming: %v", err)
	case <-time.After(actHoldBudget / 2): // below the route's idle timeout (the hold budget), which would end the request

		t.Fatal("Envoy kept the ext_proc stream open while the response streamed: mode_override ignored")
	}
	close(b.gate)
	body, err := io.ReadAll(resp.Body)
	if err != nil || !strings.HasPrefix(string(body), "backend=slow") {
		t.Fatalf("body %q, %v", body, err)
	}
}
