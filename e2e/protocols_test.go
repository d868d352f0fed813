//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/status"

	"github.com/thaw-dev/thaw/e2e/harness"
)

// dialWS opens a WebSocket to path on thaw's listener with the given Host.
func dialWS(ctx context.Context, th *harness.Thaw, host, path string) (*websocket.Conn, *http.Response, error) {
	d := websocket.Dialer{HandshakeTimeout: 60 * time.Second}
	u := strings.Replace(th.HTTPURL, "http://", "ws://", 1) + path
	return d.DialContext(ctx, u, http.Header{"Host": []string{host}})
}

// echo sends n text messages on c and checks each comes back.
func echo(t *testing.T, c *websocket.Conn, label string, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		msg := fmt.Sprintf("%s message %d", label, i)
		_ = c.SetWriteDeadline(time.Now().Add(10 * time.Second))
		if err := c.WriteMessage(websocket.TextMessage, []byte(msg)); err != nil {
			t.Fatalf("%s: write %d: %v", label, i, err)
		}
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		_, got, err := c.ReadMessage()
		if err != nil || string(got) != msg {
			t.Fatalf("%s: echo %d = %q, %v; want %q", label, i, got, err, msg)
		}
	}
}

// TestLocalWebSocket: a WebSocket upgrade to a revision at zero is held and
// wakes it (cold), echoes 100 messages, stays open across the flip to
// serve mode, and a second connection works on the warm path.
func TestLocalWebSocket(t *testing.T) { testLocalWebSocket(t, extprocArgs) }

// TestLocalModuleWebSocket is TestLocalWebSocket with the activator module:
// the module holds the upgrade at zero and pins it; Envoy proxies the
// upgraded stream itself.
func TestLocalModuleWebSocket(t *testing.T) { testLocalWebSocket(t, moduleArgs(t)) }

func testLocalWebSocket(t *testing.T, args []string) {
	th := harness.StartThaw(t, harness.ThawOptions{Args: args, Config: localConfig(t, revisionYAML{
		Name: "ws", Host: "ws.test", StartupDelay: 300 * time.Millisecond,
		Autoscaling: fast(map[string]string{"target-burst-capacity": "0"}),
	})})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	start := time.Now()
	cold, resp, err := dialWS(ctx, th, "ws.test", "/ws")
	if err != nil {
		code := 0
		if resp != nil {
			code = resp.StatusCode
		}
		t.Fatalf("cold upgrade: %v (HTTP %d)", err, code)
	}
	defer cold.Close()
	t.Logf("cold upgrade took %v", time.Since(start))
	echo(t, cold, "cold", 100)
	// The open connection is one request in flight; the revision flips to
	// serve mode (a scale decision) while it stays open.
	waitStatus(t, th, "local/ws", 60*time.Second, "serve mode with a ready backend", func(r map[string]any) bool {
		return r["mode"] == "serve" && num(r, "ready") >= 1
	})
	echo(t, cold, "cold-after-flip", 10)
	warm, _, err := dialWS(ctx, th, "ws.test", "/ws")
	if err != nil {
		t.Fatalf("warm upgrade: %v", err)
	}
	defer warm.Close()
	echo(t, warm, "warm", 100)
	echo(t, cold, "cold-still-open", 10)
	for _, c := range []*websocket.Conn{cold, warm} {
		if err := c.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, "")); err != nil {
			t.Fatalf("close: %v", err)
		}
	}
}

// TestLocalWebSocketContainerConcurrency: with container concurrency 1 and
// one process, an open WebSocket takes the only slot: a second upgrade is
// held until the first connection closes.
func TestLocalWebSocketContainerConcurrency(t *testing.T) { testLocalWebSocketCC(t, extprocArgs) }

// TestLocalModuleWebSocketContainerConcurrency is
// TestLocalWebSocketContainerConcurrency with the activator module: the
// module's slot is held for the upgraded stream's life and freed when it
// ends.
func TestLocalModuleWebSocketContainerConcurrency(t *testing.T) {
	testLocalWebSocketCC(t, moduleArgs(t))
}

func testLocalWebSocketCC(t *testing.T, args []string) {
	th := harness.StartThaw(t, harness.ThawOptions{Args: args, Config: localConfig(t, revisionYAML{
		Name: "wscc", Host: "wscc.test", StartupDelay: 100 * time.Millisecond,
		Autoscaling: fast(map[string]string{"container-concurrency": "1", "max-scale": "1"}),
	})})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	first, _, err := dialWS(ctx, th, "wscc.test", "/ws")
	if err != nil {
		t.Fatalf("first upgrade: %v", err)
	}
	echo(t, first, "first", 5)
	type dialed struct {
		c   *websocket.Conn
		err error
		at  time.Time
	}
	second := make(chan dialed, 1)
	go func() {
		c, _, err := dialWS(ctx, th, "wscc.test", "/ws")
		second <- dialed{c, err, time.Now()}
	}()
	// While the first connection is open the second upgrade must wait.
	select {
	case d := <-second:
		t.Fatalf("second upgrade finished (err %v) while the first WebSocket holds the only slot", d.err)
	case <-time.After(3 * time.Second):
	}
	echo(t, first, "first-while-second-waits", 5)
	closedAt := time.Now()
	_ = first.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""))
	first.Close()
	select {
	case d := <-second:
		if d.err != nil {
			t.Fatalf("second upgrade after the first closed: %v", d.err)
		}
		defer d.c.Close()
		if d.at.Before(closedAt) {
			t.Fatalf("second upgrade completed at %v, before the first closed at %v", d.at, closedAt)
		}
		echo(t, d.c, "second", 5)
	case <-ctx.Done():
		t.Fatal("second upgrade never completed after the first WebSocket closed")
	}
}

// grpcConn dials thaw's listener as a gRPC client (h2c) with the revision's
// host as :authority.
func grpcConn(t *testing.T, th *harness.Thaw, host string) *grpc.ClientConn {
	t.Helper()
	cc, err := grpc.NewClient("passthrough:///"+strings.TrimPrefix(th.HTTPURL, "http://"),
		grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithAuthority(host))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return cc
}

// allCallKinds makes one call of each kind and checks payloads, trailers
// and status.
func allCallKinds(ctx context.Context, t *testing.T, cc *grpc.ClientConn, label, want string) {
	t.Helper()
	tc := testpb.NewTestServiceClient(cc)
	resp, err := tc.UnaryCall(ctx, &testpb.SimpleRequest{})
	if err != nil || !strings.Contains(string(resp.GetPayload().GetBody()), want) {
		t.Fatalf("%s unary: %v, payload %q", label, err, resp.GetPayload().GetBody())
	}
	params := make([]*testpb.ResponseParameters, 5)
	for i := range params {
		params[i] = &testpb.ResponseParameters{IntervalUs: 20000}
	}
	ss, err := tc.StreamingOutputCall(ctx, &testpb.StreamingOutputCallRequest{ResponseParameters: params})
	if err != nil {
		t.Fatalf("%s server streaming: %v", label, err)
	}
	got := 0
	for {
		m, err := ss.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s server streaming recv %d: %v", label, got, err)
		}
		if !strings.Contains(string(m.GetPayload().GetBody()), want) {
			t.Fatalf("%s server streaming payload %q", label, m.GetPayload().GetBody())
		}
		got++
	}
	if got != len(params) {
		t.Fatalf("%s server streaming: %d messages, want %d", label, got, len(params))
	}
	if ss.Trailer() == nil {
		t.Fatalf("%s server streaming: no trailers", label)
	}
	cs, err := tc.StreamingInputCall(ctx)
	if err != nil {
		t.Fatalf("%s client streaming: %v", label, err)
	}
	total := 0
	for i := 1; i <= 10; i++ {
		if err := cs.Send(&testpb.StreamingInputCallRequest{Payload: &testpb.Payload{Body: make([]byte, i)}}); err != nil {
			t.Fatalf("%s client streaming send: %v", label, err)
		}
		total += i
	}
	sum, err := cs.CloseAndRecv()
	if err != nil || int(sum.GetAggregatedPayloadSize()) != total {
		t.Fatalf("%s client streaming: %v, size %d, want %d", label, err, sum.GetAggregatedPayloadSize(), total)
	}
	bidi, err := tc.FullDuplexCall(ctx)
	if err != nil {
		t.Fatalf("%s bidi: %v", label, err)
	}
	for i := 0; i < 20; i++ {
		body := fmt.Appendf(nil, "%s %d", label, i)
		if err := bidi.Send(&testpb.StreamingOutputCallRequest{Payload: &testpb.Payload{Body: body}}); err != nil {
			t.Fatalf("%s bidi send %d: %v", label, i, err)
		}
		m, err := bidi.Recv()
		if err != nil || string(m.GetPayload().GetBody()) != string(body) {
			t.Fatalf("%s bidi recv %d: %v %q", label, i, err, m.GetPayload().GetBody())
		}
	}
	if err := bidi.CloseSend(); err != nil {
		t.Fatal(err)
	}
	if _, err := bidi.Recv(); !errors.Is(err, io.EOF) {
		t.Fatalf("%s bidi end: %v, want EOF (grpc-status OK)", label, err)
	}
	hc, err := healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{})
	if err != nil || hc.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("%s health: %v %v", label, hc.GetStatus(), err)
	}
	// An unimplemented method's status crosses Envoy intact.
	if _, err := tc.UnimplementedCall(ctx, &testpb.Empty{}); status.Code(err) != codes.Unimplemented {
		t.Fatalf("%s unimplemented: %v, want code Unimplemented", label, err)
	}
}

// TestLocalGRPC: a gRPC (h2c) revision at zero wakes on a unary call; all
// four call kinds work cold (proxy mode) and warm (serve mode), with
// trailers and grpc-status intact.
func TestLocalGRPC(t *testing.T) {
	th := harness.StartThaw(t, harness.ThawOptions{Config: localConfig(t, revisionYAML{
		Name: "grpc", Host: "grpc.test", StartupDelay: 300 * time.Millisecond, Protocol: "h2c",
		Autoscaling: fast(map[string]string{"target-burst-capacity": "0"}),
	})})
	cc := grpcConn(t, th, "grpc.test")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	start := time.Now()
	if _, err := testpb.NewTestServiceClient(cc).UnaryCall(ctx, &testpb.SimpleRequest{}); err != nil {
		t.Fatalf("cold unary call: %v", err)
	}
	t.Logf("cold unary call took %v", time.Since(start))
	allCallKinds(ctx, t, cc, "cold", "hello from grpc")
	waitStatus(t, th, "local/grpc", 60*time.Second, "serve mode with a ready backend", func(r map[string]any) bool {
		return r["mode"] == "serve" && num(r, "ready") >= 1
	})
	allCallKinds(ctx, t, cc, "warm", "hello from grpc")
}

// TestLocalGRPCHoldTimeout: a gRPC call held past the revision's hold
// timeout gets grpc-status UNAVAILABLE (a status gRPC clients retry), not
// an HTTP error page.
func TestLocalGRPCHoldTimeout(t *testing.T) {
	th := harness.StartThaw(t, harness.ThawOptions{Config: localConfig(t, revisionYAML{
		Name: "slowgrpc", Host: "slowgrpc.test", StartupDelay: 30 * time.Second, Protocol: "h2c",
		Autoscaling: fast(map[string]string{"hold-timeout": "1s"}),
	})})
	cc := grpcConn(t, th, "slowgrpc.test")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := testpb.NewTestServiceClient(cc).UnaryCall(ctx, &testpb.SimpleRequest{})
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("held call past hold-timeout: %v (code %v), want code Unavailable", err, status.Code(err))
	}
	t.Logf("held call: %v", err)
}

// rawRequest writes req on a new TCP connection to thaw's listener and
// returns the status line and the whole response.
func rawRequest(t *testing.T, th *harness.Thaw, req string) (string, string) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", strings.TrimPrefix(th.HTTPURL, "http://"), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(60 * time.Second))
	if _, err := io.WriteString(conn, req); err != nil {
		t.Fatal(err)
	}
	all, err := io.ReadAll(bufio.NewReader(conn))
	if err != nil {
		t.Fatalf("read: %v (got %q)", err, all)
	}
	line, _, _ := strings.Cut(string(all), "\r\n")
	return line, string(all)
}

// TestLocalHTTP10AndHosts: an HTTP/1.0 client (no keep-alive) is served
// cold and warm; a trailing dot and a port in Host match the revision; an
// unknown host gets Envoy's 404, counted on thaw's /metrics. Once with
// thaw_http's "*" catch-all (the default: a direct response) and once
// with --on-demand-hosts (no catch-all: Envoy fetches each host over VHDS,
// thaw resolves it with Envoy's rules, and the unknown host is Envoy's
// no_route).
func TestLocalHTTP10AndHosts(t *testing.T) {
	for _, arm := range []struct {
		name, refusal, notCounted string
		args, more                []string
	}{
		{name: "catch-all", refusal: "rq_direct_response", notCounted: "no_route"},
		{name: "on-demand-hosts", refusal: "no_route", notCounted: "rq_direct_response", args: []string{"--on-demand-hosts"},
			more: []string{`thaw_xds_on_demand_answers_total{result="unknown"} 1`}},
	} {
		t.Run(arm.name, func(t *testing.T) {
			th := harness.StartThaw(t, harness.ThawOptions{Args: arm.args, Config: localConfig(t, revisionYAML{
				Name: "old", Host: "old.test", StartupDelay: 100 * time.Millisecond, Autoscaling: fast(nil),
			})})
			httpVersionsAndHosts(t, th, append([]string{
				`thaw_envoy_http_refusals_total{counter="` + arm.refusal + `"} 1`,
				`thaw_envoy_http_refusals_total{counter="` + arm.notCounted + `"} 0`,
				`thaw_envoy_http_refusals_total{counter="downstream_rq_4xx"} 1`,
			}, arm.more...))
		})
	}
}

// httpVersionsAndHosts is TestLocalHTTP10AndHosts's check of one thaw
// serving revision "old" at old.test; metricLines are the refusal lines
// thaw's /metrics must then hold.
func httpVersionsAndHosts(t *testing.T, th *harness.Thaw, metricLines []string) {
	t.Helper()
	for _, label := range []string{"cold", "warm"} {
		line, all := rawRequest(t, th, "GET / HTTP/1.0\r\nHost: old.test\r\n\r\n")
		if !strings.Contains(line, " 200 ") || !strings.Contains(all, "hello from old") {
			t.Fatalf("%s HTTP/1.0: %q\n%s", label, line, all)
		}
	}
	for _, host := range []string{"old.test.", "OLD.test", "old.test:" + fmt.Sprint(th.HTTPPort), "old.test.:80"} {
		line, all := rawRequest(t, th, "GET / HTTP/1.1\r\nHost: "+host+"\r\nConnection: close\r\n\r\n")
		if !strings.Contains(line, " 200 ") || !strings.Contains(all, "hello from old") {
			t.Fatalf("Host %q: %q\n%s", host, line, all)
		}
	}
	line, _ := rawRequest(t, th, "GET / HTTP/1.1\r\nHost: other.test\r\nConnection: close\r\n\r\n")
	if !strings.Contains(line, " 404 ") {
		t.Fatalf("unknown host: %q, want 404", line)
	}
	// Envoy's own 404 is visible on thaw's /metrics (read from Envoy's
	// admin at scrape time).
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	code, metrics, _, err := getURL(ctx, th.AdminURL+"/metrics")
	if err != nil || code != 200 {
		t.Fatalf("thaw /metrics: %d %v", code, err)
	}
	for _, want := range metricLines {
		if !strings.Contains(metrics, want+"\n") {
			t.Fatalf("thaw /metrics lacks %q; refusal and on-demand lines:\n%s\n%s", want, grepLines(metrics, "thaw_envoy_http_refusals_total"), grepLines(metrics, "thaw_xds_on_demand"))
		}
	}
}

// getURL GETs url and returns the status and body.
func getURL(ctx context.Context, url string) (int, string, http.Header, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, "", nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header, err
}
