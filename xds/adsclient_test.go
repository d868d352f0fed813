package xds

import (
	"context"
	"net"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"
	"google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/thaw-dev/thaw/revision"
	"github.com/thaw-dev/thaw/xds/encoded"
	"github.com/thaw-dev/thaw/xds/translate"
)

// waitLimit bounds every wait in component tests; reaching it is a
// failure, never an expected outcome.
const waitLimit = 20 * time.Second

// fixture is a running Server on a loopback gRPC listener with its
// registry.
type fixture struct {
	srv  *Server
	reg  *revision.Registry
	prom *prometheus.Registry
	addr string
}

func startFixture(t *testing.T, cfg translate.Config) *fixture {
	t.Helper()
	return startFixtureWith(t, cfg, zaptest.NewLogger(t), 0)
}

// startBenchFixture is startFixture for benchmarks: no logs.
func startBenchFixture(b *testing.B) *fixture {
	b.Helper()
	return startFixtureWith(b, componentConfig(), zap.NewNop(), time.Millisecond)
}

// startFixtureWith starts a fixture; a registry holdoff > 0 batches changes
// (run by the fixture), which large setups need.
func startFixtureWith(t testing.TB, cfg translate.Config, log *zap.Logger, holdoff time.Duration) *fixture {
	t.Helper()
	return startFixtureOpts(t, ServerOptions{Logger: log, Config: cfg}, holdoff)
}

// startFixtureOpts starts a fixture whose server gets opts (Registerer is
// set by the fixture) and TapHandle, as thaw installs it.
func startFixtureOpts(t testing.TB, opts ServerOptions, holdoff time.Duration) *fixture {
	t.Helper()
	return startFixtureOn(t, opts, revision.NewRegistry(revision.RegistryOptions{Holdoff: holdoff}))
}

// startFixtureOn is startFixtureOpts on a registry of the test's own
// (run by the fixture).
func startFixtureOn(t testing.TB, opts ServerOptions, reg *revision.Registry) *fixture {
	t.Helper()
	prom := prometheus.NewRegistry()
	opts.Registerer = prom
	srv := NewServer(opts)
	g := grpc.NewServer(grpc.InTapHandle(srv.TapHandle()))
	srv.Register(g)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go g.Serve(ln)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx, reg) }()
	regDone := make(chan struct{})
	go func() { reg.Run(ctx); close(regDone) }()
	t.Cleanup(func() {
		cancel()
		<-regDone
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
		stopGRPC(g) // after Run: its streams are ending
	})
	return &fixture{srv: srv, reg: reg, prom: prom, addr: ln.Addr().String()}
}

// upsert adds a valid revision with hosts and backends in a mode. Spec
// last: the revision appears in one snapshot, complete.
func (f *fixture) upsert(key revision.Key, mode revision.Mode, hosts []string, backends ...revision.Backend) {
	spec := revision.DefaultSpec()
	spec.Hosts = hosts
	spec.Port = 8000
	f.reg.SetBackends(key, backends)
	f.reg.SetMode(key, mode)
	f.reg.Upsert(key, spec)
}

// deltaStream is a delta xDS client stream: ADS, or a non-ADS service's.
type deltaStream interface {
	Send(*discoveryv3.DeltaDiscoveryRequest) error
	Recv() (*discoveryv3.DeltaDiscoveryResponse, error)
}

// deltaClient is an in-process delta ADS client playing Envoy.
type deltaClient struct {
	t      testing.TB
	node   *corev3.Node
	stream deltaStream
	cancel context.CancelFunc
	first  bool
	// next is the Recv in flight (arrival), nil when none is.
	next chan recvResult
}

// dialDelta opens a delta ADS stream as Envoy does. Responses of up to
// 512 MiB are accepted: the initial sync at 100,000 revisions sends every
// cluster in one response, and Envoy accepts it.
func dialDelta(t testing.TB, addr, nodeID string) *deltaClient {
	t.Helper()
	conn, ctx, cancel := dialServer(t, addr)
	stream, err := discoveryv3.NewAggregatedDiscoveryServiceClient(conn).DeltaAggregatedResources(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return newDeltaClient(t, nodeID, stream, cancel)
}

// newDeltaClient is the client of an open delta stream as node nodeID;
// cancel ends the stream.
func newDeltaClient(t testing.TB, nodeID string, stream deltaStream, cancel context.CancelFunc) *deltaClient {
	return &deltaClient{t: t, node: &corev3.Node{Id: nodeID, Cluster: "test"}, stream: stream, cancel: cancel, first: true}
}

// dialServer connects to the server at addr in plaintext, as the test's
// Envoy, accepting responses of up to 512 MiB, and returns the connection
// and a context for one stream on it with its cancel; both end with the
// test.
func dialServer(t testing.TB, addr string) (*grpc.ClientConn, context.Context, context.CancelFunc) {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(512<<20)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	return conn, ctx, cancel
}

func (c *deltaClient) send(req *discoveryv3.DeltaDiscoveryRequest) {
	c.t.Helper()
	if c.first {
		req.Node = c.node
		c.first = false
	}
	if err := c.stream.Send(req); err != nil {
		c.t.Fatalf("send: %v", err)
	}
}

// subscribe asks for names of typeURL (none: wildcard).
func (c *deltaClient) subscribe(typeURL string, names ...string) {
	c.t.Helper()
	c.send(&discoveryv3.DeltaDiscoveryRequest{TypeUrl: typeURL, ResourceNamesSubscribe: names})
}

// recvResult is one Recv of a stream.
type recvResult struct {
	resp *discoveryv3.DeltaDiscoveryResponse
	err  error
}

// arrival returns a channel that delivers the stream's next Recv, the
// same one until took is called: one Recv is in flight at a time, so a
// caller that stops waiting (ackLoop once its condition holds) leaves the
// response to the next recv instead of losing it.
func (c *deltaClient) arrival() <-chan recvResult {
	if c.next == nil {
		ch := make(chan recvResult, 1)
		go func() {
			r, err := c.stream.Recv()
			ch <- recvResult{r, err}
		}()
		c.next = ch
	}
	return c.next
}

// took records that the result of arrival was received.
func (c *deltaClient) took() { c.next = nil }

// recv returns the next response, failing after waitLimit.
func (c *deltaClient) recv() *discoveryv3.DeltaDiscoveryResponse {
	c.t.Helper()
	select {
	case r := <-c.arrival():
		c.took()
		if r.err != nil {
			c.t.Fatalf("recv: %v", r.err)
		}
		return r.resp
	case <-time.After(waitLimit):
		c.t.Fatalf("no response within %s", waitLimit)
		return nil
	}
}

// recvType receives the next response and checks its type.
func (c *deltaClient) recvType(typeURL string) *discoveryv3.DeltaDiscoveryResponse {
	c.t.Helper()
	r := c.recv()
	if r.GetTypeUrl() != typeURL {
		c.t.Fatalf("got a %s response (%v), want %s", encoded.ShortType(r.GetTypeUrl()), resourceNames(r), encoded.ShortType(typeURL))
	}
	return r
}

func (c *deltaClient) ack(r *discoveryv3.DeltaDiscoveryResponse) {
	c.t.Helper()
	c.send(&discoveryv3.DeltaDiscoveryRequest{TypeUrl: r.GetTypeUrl(), ResponseNonce: r.GetNonce()})
}

func (c *deltaClient) nack(r *discoveryv3.DeltaDiscoveryResponse, msg string) {
	c.t.Helper()
	c.send(&discoveryv3.DeltaDiscoveryRequest{TypeUrl: r.GetTypeUrl(), ResponseNonce: r.GetNonce(),
		ErrorDetail: &status.Status{Code: 3, Message: msg}})
}

func resourceNames(r *discoveryv3.DeltaDiscoveryResponse) []string {
	var out []string
	for _, res := range r.GetResources() {
		out = append(out, res.GetName())
	}
	return out
}

// waitFor polls cond (bounded count and time) and fails if it never holds.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for i := 0; i < 100000 && time.Now().Before(deadline); i++ {
		if cond() {
			return
		}
		time.Sleep(2 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s", what)
}

// stopGRPC stops g gracefully, so stream handlers (and their logging to
// the test's logger) finish before the test ends; it forces the stop after
// 10 s.
func stopGRPC(g *grpc.Server) {
	done := make(chan struct{})
	go func() { g.GracefulStop(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		g.Stop()
	}
}
