package main

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gorilla/websocket"
	"google.golang.org/grpc"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"

	"github.com/thaw-dev/thaw/bench/results"
)

// runProtocols measures what gRPC and WebSocket clients get from thaw, in
// one `thaw local`:
//
//   - gRPC warm path first (grpcwarm.go), while no other backend runs: an
//     h2c revision kept in serve mode vs a static Envoy routing over h2c to
//     the same backend process;
//   - then cold starts, in turn a gRPC unary call to an h2c revision at
//     zero (grpc-go), a WebSocket upgrade to an http1 revision at zero
//     (gorilla/websocket) and, as a reference measured under the same
//     load, a plain HTTP GET (cold.go's request), each revision woken
//     exactly once. The overhead has cold.go's definition: the response's
//     end minus the moment the backend began listening. A gRPC server has
//     no HTTP /stats, so the workload sends its start times in the response
//     headers of the call itself (examples/workload/grpc.go).
func runProtocols(e *env) (*results.Protocols, error) {
	dir, err := e.tempDir("protocols")
	if err != nil {
		return nil, err
	}
	n := 30
	if e.quick {
		n = 5
	}
	zero := map[string]string{"initial-scale": "0"}
	one := map[string]string{"min-scale": "1", "max-scale": "1", "initial-scale": "1", "target-burst-capacity": "0"}
	wsRevs := []rev{{name: "ws-warmup", autoscaling: zero}}
	httpRevs := []rev{{name: "http-warmup", autoscaling: zero}}
	grpcRevs := []h2cRev{{name: "grpc-warmup", autoscaling: zero}}
	for i := range n {
		wsRevs = append(wsRevs, rev{name: fmt.Sprintf("ws-cold-%d", i), autoscaling: zero})
		httpRevs = append(httpRevs, rev{name: fmt.Sprintf("http-cold-%d", i), autoscaling: zero})
		grpcRevs = append(grpcRevs, h2cRev{name: fmt.Sprintf("grpc-cold-%d", i), autoscaling: zero})
	}
	serveRev := h2cRev{name: "grpc-serve", autoscaling: one}
	cfg := localConfig(e.workloadBin, append(wsRevs, httpRevs...)...) + h2cConfig(e.workloadBin, append([]h2cRev{serveRev}, grpcRevs...)...)
	th, err := startThaw(e.ctx, e, dir, cfg)
	if err != nil {
		return nil, err
	}
	defer e.stopLogged(th.process)

	out := &results.Protocols{Load1Start: load1()}
	defer func() { out.Load1End = load1() }()
	warm, err := runGRPCWarm(e, dir, th, serveRev)
	out.GRPCWarm = warm
	if err != nil {
		return out, fmt.Errorf("gRPC warm path: %w", err)
	}

	addr := strings.TrimPrefix(th.httpURL, "http://")
	c := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DisableCompression: true}}
	// The first wake-up of each kind is not counted: it opens the
	// connections between Envoy and the activator.
	if _, err := grpcColdOnce(e.ctx, addr, grpcRevs[0].host()); err != nil {
		return out, fmt.Errorf("gRPC warm-up cold start: %w", err)
	}
	if _, err := wsColdOnce(e.ctx, c, th, wsRevs[0].host()); err != nil {
		return out, fmt.Errorf("WebSocket warm-up cold start: %w", err)
	}
	if _, err := coldOnce(e.ctx, c, th, httpRevs[0]); err != nil {
		return out, fmt.Errorf("HTTP warm-up cold start: %w", err)
	}
	g := results.ProtocolCold{Kind: "grpc",
		Request:   "grpc-go unary call (grpc.testing.TestService/UnaryCall) over h2c prior knowledge to thaw's listener, h2c revision; end: the call returned (response and trailers read)",
		Listening: "response headers x-workload-listening-unix-nano and x-workload-requests of the call itself (must be 1: a fresh backend)"}
	w := results.ProtocolCold{Kind: "websocket",
		Request:   "gorilla/websocket upgrade of GET /ws, http1 revision; end: the 101 response read (the dial returned); one echo checked afterwards, not timed",
		Listening: "the workload's GET /stats through thaw after the echo (requests must be 1: a fresh backend)"}
	h := results.ProtocolCold{Kind: "http", Reference: true,
		Request:   "Go net/http GET / on a kept-alive HTTP/1.1 connection, http1 revision (the cold-start scenario's request); end: the body read",
		Listening: "the workload's GET /stats through thaw (requests must be 1: a fresh backend)"}
	for i := range n {
		s, err := grpcColdOnce(e.ctx, addr, grpcRevs[1+i].host())
		coldAdd(&g.Cold, s, err)
		s, err = wsColdOnce(e.ctx, c, th, wsRevs[1+i].host())
		coldAdd(&w.Cold, s, err)
		s, err = coldOnce(e.ctx, c, th, httpRevs[1+i])
		coldAdd(&h.Cold, s, err)
		if err := e.ctx.Err(); err != nil {
			return out, err
		}
	}
	for _, pc := range []*results.ProtocolCold{&g, &w, &h} {
		coldSummarise(&pc.Cold)
		e.logf("protocols: cold %s: overhead p50 %.1f ms p99 %.1f ms max %.1f ms; total p50 %.1f ms; spawn p50 %.1f ms; %d/%d errors %v",
			pc.Kind, pc.OverheadP50Ms, pc.OverheadP99Ms, pc.OverheadMaxMs, pc.TotalP50Ms, pc.SpawnP50Ms, pc.Errors, pc.N, pc.Fails)
		out.Cold = append(out.Cold, *pc)
	}
	return out, nil
}

// coldAdd counts one cold start in c: its sample, or its error.
func coldAdd(c *results.Cold, s results.ColdSample, err error) {
	c.N++
	if err != nil {
		c.Errors++
		if len(c.Fails) < 5 {
			c.Fails = append(c.Fails, err.Error())
		}
		return
	}
	c.Samples = append(c.Samples, s)
}

// coldSummarise fills c's quantiles from its samples.
func coldSummarise(c *results.Cold) {
	var overhead, total, spawn []float64
	for _, s := range c.Samples {
		overhead, total, spawn = append(overhead, s.OverheadMs), append(total, s.TotalMs), append(spawn, s.SpawnMs)
	}
	c.OverheadP50Ms, c.OverheadP99Ms = results.Quantile(overhead, 0.5), results.Quantile(overhead, 0.99)
	c.OverheadMaxMs = results.Quantile(overhead, 1)
	c.TotalP50Ms, c.TotalP99Ms = results.Quantile(total, 0.5), results.Quantile(total, 0.99)
	c.SpawnP50Ms = results.Quantile(spawn, 0.5)
}

// coldSample computes one sample from the client's send and end times and
// the backend's own start and listening times.
func coldSample(t0, end, started, listening time.Time) results.ColdSample {
	return results.ColdSample{
		TotalMs:    results.Millis(end.Sub(t0)),
		SpawnMs:    results.Millis(started.Sub(t0)),
		StartupMs:  results.Millis(listening.Sub(started)),
		OverheadMs: results.Millis(end.Sub(listening)),
	}
}

// grpcColdOnce makes one unary call to the h2c revision behind host, which
// is at zero. Its connection to thaw's listener is up (HTTP/2 settings
// exchanged) before the clock starts, as an HTTP client's kept-alive
// connection is in cold.go.
func grpcColdOnce(ctx context.Context, addr, host string) (results.ColdSample, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cc, err := dialGRPC(ctx, addr, host)
	if err != nil {
		return results.ColdSample{}, fmt.Errorf("%s: %w", host, err)
	}
	defer cc.Close()
	var md metadata.MD
	t0 := time.Now()
	_, err = testpb.NewTestServiceClient(cc).UnaryCall(ctx, &testpb.SimpleRequest{}, grpc.Header(&md))
	end := time.Now()
	if err != nil {
		return results.ColdSample{}, fmt.Errorf("%s: %w", host, err)
	}
	var v [3]int64
	for i, k := range []string{"x-workload-started-unix-nano", "x-workload-listening-unix-nano", "x-workload-requests"} {
		vs := md.Get(k)
		if len(vs) != 1 {
			return results.ColdSample{}, fmt.Errorf("%s: response header %s = %q, want one value", host, k, vs)
		}
		if v[i], err = strconv.ParseInt(vs[0], 10, 64); err != nil {
			return results.ColdSample{}, fmt.Errorf("%s: response header %s: %w", host, k, err)
		}
	}
	if v[2] != 1 {
		return results.ColdSample{}, fmt.Errorf("%s: backend began %d calls, want 1 (not a fresh backend)", host, v[2])
	}
	return coldSample(t0, end, time.Unix(0, v[0]), time.Unix(0, v[1])), nil
}

// dialGRPC returns a client connection to addr (h2c prior knowledge) with
// :authority host, once it is ready.
func dialGRPC(ctx context.Context, addr, host string) (*grpc.ClientConn, error) {
	cc, err := grpc.NewClient("passthrough:///"+addr,
		grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithAuthority(host))
	if err != nil {
		return nil, fmt.Errorf("grpc client: %w", err)
	}
	cc.Connect()
	for s := cc.GetState(); s != connectivity.Ready; s = cc.GetState() {
		if !cc.WaitForStateChange(ctx, s) {
			cc.Close()
			return nil, fmt.Errorf("grpc connection to %s not ready (last state %s): %w", addr, s, ctx.Err())
		}
	}
	return cc, nil
}

// wsColdOnce upgrades GET /ws on the http1 revision behind host, which is
// at zero, checks one echo, closes, and reads the backend's start times from
// its /stats.
func wsColdOnce(ctx context.Context, c *http.Client, th *thaw, host string) (results.ColdSample, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	d := websocket.Dialer{HandshakeTimeout: 30 * time.Second}
	url := "ws://" + strings.TrimPrefix(th.httpURL, "http://") + "/ws"
	t0 := time.Now()
	conn, resp, err := d.DialContext(ctx, url, http.Header{"Host": []string{host}})
	end := time.Now()
	if err != nil {
		status := ""
		if resp != nil {
			status = " (" + resp.Status + ")"
		}
		return results.ColdSample{}, fmt.Errorf("%s: upgrade%s: %w", host, status, err)
	}
	echoErr := wsEcho(conn, "cold "+host)
	_ = conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
	conn.Close()
	if echoErr != nil {
		return results.ColdSample{}, fmt.Errorf("%s: %w", host, echoErr)
	}
	st, err := fetchStats(ctx, c, th.httpURL, host)
	if err != nil {
		return results.ColdSample{}, err
	}
	if st.Requests != 1 {
		return results.ColdSample{}, fmt.Errorf("%s: backend served %d requests, want 1 (not a fresh backend)", host, st.Requests)
	}
	return coldSample(t0, end, time.Unix(0, st.Started), time.Unix(0, st.Listening)), nil
}

// wsEcho sends msg and expects it back within 10 s.
func wsEcho(conn *websocket.Conn, msg string) error {
	_ = conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
	if err := conn.WriteMessage(websocket.TextMessage, []byte(msg)); err != nil {
		return fmt.Errorf("websocket write: %w", err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, got, err := conn.ReadMessage()
	if err != nil {
		return fmt.Errorf("websocket read: %w", err)
	}
	if string(got) != msg {
		return fmt.Errorf("websocket echo %q, want %q", got, msg)
	}
	return nil
}

// h2cRev is a revision of the example workload serving gRPC (--protocol
// h2c, `protocol: h2c`, TCP readiness: a gRPC server answers no HTTP/1.1
// probe).
type h2cRev struct {
	name        string
	autoscaling map[string]string
}

func (r h2cRev) host() string { return r.name + ".bench" }

// h2cConfig renders revs as entries of the `revisions:` list localConfig
// starts (append it to localConfig's output).
func h2cConfig(workloadBin string, revs ...h2cRev) string {
	var b strings.Builder
	for _, r := range revs {
		fmt.Fprintf(&b, "  - name: %s\n    hosts: [%s]\n    protocol: h2c\n", r.name, r.host())
		fmt.Fprintf(&b, "    command: [%q, --port, \"{port}\", --protocol, h2c]\n", workloadBin)
		fmt.Fprintf(&b, "    env:\n      BODY: hello from %s\n", r.name)
		b.WriteString("    readiness:\n      tcp: true\n      period: 1s\n    stopTimeout: 5s\n")
		writeAutoscaling(&b, r.autoscaling)
	}
	return b.String()
}
