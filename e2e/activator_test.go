//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/thaw-dev/thaw/activator"
	"github.com/thaw-dev/thaw/e2e/harness"
	"github.com/thaw-dev/thaw/extproc"
	"github.com/thaw-dev/thaw/revision"
	"github.com/thaw-dev/thaw/xds/translate"
)

// The activator path against real Envoy 1.40 with a STATIC config that
// reproduces the wire contract (docs/activator.md): listener thaw_http ->
// cluster rev_<ns>_<name> whose only endpoint is the internal listener
// thaw_activator (internal_upstream transport socket) -> ext_proc (the
// activator) -> cluster thaw_activator_dst (ORIGINAL_DST, address from
// dynamic metadata). The activator follows a real revision.Registry.

const actHoldBudget = 15 * time.Second

// actMessageTimeout is the ext_proc message_timeout of the test config. The
// contract's 0.2 s is a timed assertion on a loaded 2-core machine running
// -race: 200 streams opened at once must each get override_message_timeout
// within it, and a miss is a 504 from Envoy (seen once under load average
// 17). The tests check behaviour, not that deadline.
const actMessageTimeout = 2 * time.Second

// actBackend is a revision backend: an HTTP server on loopback that counts
// requests and the highest number it served at once.
type actBackend struct {
	name    string
	ln      net.Listener
	srv     *http.Server
	delay   time.Duration
	gate    chan struct{} // if set, handlers flush headers then wait for it
	served  atomic.Int64
	current atomic.Int64
	maxSeen atomic.Int64
}

func actStartBackend(t *testing.T, name string, delay time.Duration) *actBackend {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &actBackend{name: name, ln: ln, delay: delay}
	b.srv = &http.Server{Handler: http.HandlerFunc(b.serve)}
	go b.srv.Serve(ln)
	t.Cleanup(func() { b.srv.Close() })
	return b
}

func (b *actBackend) serve(w http.ResponseWriter, r *http.Request) {
	n := b.current.Add(1)
	defer b.current.Add(-1)
	for m := b.maxSeen.Load(); n > m && !b.maxSeen.CompareAndSwap(m, n); m = b.maxSeen.Load() {
	}
	b.served.Add(1)
	if b.delay > 0 {
		time.Sleep(b.delay)
	}
	w.Header().Set("x-backend", b.name)
	if b.gate != nil {
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		<-b.gate
	}
	fmt.Fprintf(w, "backend=%s revision=%s", b.name, r.Header.Get("x-thaw-revision"))
}

func (b *actBackend) backend() revision.Backend {
	a := b.ln.Addr().(*net.TCPAddr)
	return revision.Backend{Address: a.IP.String(), Port: int32(a.Port), Ready: true}
}

type recordingPoker struct{ n atomic.Int64 }

func (p *recordingPoker) Poke(revision.Key) { p.n.Add(1) }

// actEnv is thaw's activator side (registry, activator, ext_proc gRPC
// server) plus Envoy with the static contract config.
type actEnv struct {
	reg    *revision.Registry
	act    *activator.Activator
	srv    *extproc.Server
	poker  *recordingPoker
	envoy  *harness.Envoy
	port   int
	client *http.Client
	grpc   *grpc.Server
}

// actStart starts everything; revs are revision names in namespace
// "default", each served on host <name>.example.com.
func actStart(t *testing.T, revs ...string) *actEnv {
	t.Helper()
	log := zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel))
	e := &actEnv{reg: revision.NewRegistry(revision.RegistryOptions{Logger: log}), poker: &recordingPoker{}}
	e.act = activator.New(activator.Options{Logger: log, Poker: e.poker})
	e.srv = extproc.NewServer(extproc.ServerOptions{Logger: log, Activator: e.act, HoldBudget: actHoldBudget})
	ctx, cancel := context.WithCancel(context.Background())
	runDone := make(chan struct{})
	go func() { defer close(runDone); e.act.Run(ctx, e.reg) }()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer()
	e.srv.Register(g)
	go g.Serve(ln)
	e.grpc = g
	t.Cleanup(func() { g.Stop(); cancel(); <-runDone })

	e.port = harness.PickPort(t)
	e.envoy = harness.StartEnvoy(t, harness.EnvoyOptions{
		Bootstrap: actBootstrap(e.port, ln.Addr().(*net.TCPAddr).Port, actHoldBudget, revs),
	})
	e.client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 512}, Timeout: 2 * actHoldBudget}
	t.Cleanup(e.client.CloseIdleConnections)
	return e
}

// revision upserts default/<name> and marks the registry synced.
func (e *actEnv) revision(t *testing.T, name string, cc int, hold time.Duration, depth int) revision.Key {
	t.Helper()
	key := revision.Key{Namespace: "default", Name: name}
	s := revision.DefaultSpec()
	s.Hosts, s.ContainerConcurrency, s.HoldTimeout, s.QueueDepth = []string{name + ".example.com"}, cc, hold, depth
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	e.reg.Upsert(key, s)
	e.reg.SetSynced()
	return key
}

func (e *actEnv) setBackends(key revision.Key, bs ...*actBackend) {
	out := make([]revision.Backend, 0, len(bs))
	for _, b := range bs {
		out = append(out, b.backend())
	}
	e.reg.SetBackends(key, out)
}

type actResp struct {
	code       int
	body       string
	retryAfter string
	took       time.Duration
	err        error
}

func (e *actEnv) get(ctx context.Context, host string, hdr map[string]string) actResp {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/", e.port), nil)
	if err != nil {
		return actResp{err: err}
	}
	req.Host = host
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	start := time.Now()
	resp, err := e.client.Do(req)
	if err != nil {
		return actResp{err: err, took: time.Since(start)}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return actResp{code: resp.StatusCode, body: string(b), retryAfter: resp.Header.Get("Retry-After"), took: time.Since(start), err: err}
}

// waitStats waits (bounded, 20 s) until the activator reports held and
// in-flight counts for key.
func (e *actEnv) waitStats(t *testing.T, key revision.Key, held, inFlight int) {
	t.Helper()
	for i := 0; i < 2000; i++ {
		if h, f := e.act.Stats(key); h == held && f == inFlight {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	h, f := e.act.Stats(key)
	t.Fatalf("activator Stats(%s) = %d held, %d in flight after 20s; want %d, %d", key, h, f, held, inFlight)
}

// waitHeld waits (bounded, 20 s) until key holds n requests, failing at
// once with the answer if a request ends while it should be held.
func (e *actEnv) waitHeld(t *testing.T, key revision.Key, n int, results <-chan actResp) {
	t.Helper()
	for i := 0; i < 2000; i++ {
		if h, _ := e.act.Stats(key); h == n {
			return
		}
		select {
		case r := <-results:
			t.Fatalf("a request ended while it should be held: %d %q after %v (%v)", r.code, r.body, r.took, r.err)
		case <-time.After(10 * time.Millisecond):
		}
	}
	h, f := e.act.Stats(key)
	t.Fatalf("activator Stats(%s) = %d held, %d in flight after 20s; want %d held", key, h, f, n)
}

// TestActivatorColdStart: 200 concurrent requests reach a revision without
// backends; the activator holds them all and pokes the autoscaler; a
// backend starts 2 s later; every request is served by it, none slower than
// the hold budget.
func TestActivatorColdStart(t *testing.T) {
	e := actStart(t, "demo")
	key := e.revision(t, "demo", 0, 10*time.Second, 1000)
	const n = 200
	results := make(chan actResp, n)
	for i := 0; i < n; i++ {
		go func() { results <- e.get(context.Background(), "demo.example.com", nil) }()
	}
	e.waitHeld(t, key, n, results)
	if e.poker.n.Load() < 1 {
		t.Fatal("no poke while 200 requests were held for a revision without backends")
	}
	time.Sleep(2 * time.Second) // the backend takes 2 s to start
	b := actStartBackend(t, "b1", 0)
	e.setBackends(key, b)
	for i := 0; i < n; i++ {
		r := <-results
		if r.err != nil || r.code != 200 || r.body != "backend=b1 revision=default/demo" {
			t.Fatalf("request %d: %d %q %v, want 200 from b1", i, r.code, r.body, r.err)
		}
		if r.took >= actHoldBudget {
			t.Errorf("request %d took %v, over the hold budget %v", i, r.took, actHoldBudget)
		}
	}
	if got := b.served.Load(); got != n {
		t.Fatalf("backend served %d requests, want %d", got, n)
	}
	e.waitStats(t, key, 0, 0)
}

// TestActivatorContainerConcurrency: with container concurrency 1 and two
// backends, no backend ever has two requests at once, and the load is
// spread over both.
func TestActivatorContainerConcurrency(t *testing.T) {
	e := actStart(t, "demo")
	key := e.revision(t, "demo", 1, 10*time.Second, 1000)
	b1, b2 := actStartBackend(t, "b1", 20*time.Millisecond), actStartBackend(t, "b2", 20*time.Millisecond)
	e.setBackends(key, b1, b2)
	const n = 40
	var wg sync.WaitGroup
	errs := make(chan string, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if r := e.get(context.Background(), "demo.example.com", nil); r.err != nil || r.code != 200 {
				errs <- fmt.Sprintf("%d %q %v", r.code, r.body, r.err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for s := range errs {
		t.Errorf("request failed: %s", s)
	}
	for _, b := range []*actBackend{b1, b2} {
		if m := b.maxSeen.Load(); m != 1 {
			t.Errorf("backend %s saw %d concurrent requests, want 1 (container concurrency 1)", b.name, m)
		}
		if b.served.Load() == 0 {
			t.Errorf("backend %s served nothing", b.name)
		}
	}
	if got := b1.served.Load() + b2.served.Load(); got != n {
		t.Errorf("backends served %d requests, want %d", got, n)
	}
	e.waitStats(t, key, 0, 0)
}

// TestActivatorCompletionSignal: the backend's slot stays taken while the
// response streams and is released only when the request ends: Envoy keeps
// the ext_proc stream open until then (response_trailer_mode SEND).
func TestActivatorCompletionSignal(t *testing.T) {
	e := actStart(t, "demo")
	key := e.revision(t, "demo", 1, 10*time.Second, 10)
	b := actStartBackend(t, "slow", 0)
	b.gate = make(chan struct{})
	e.setBackends(key, b)

	req, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/", e.port), nil)
	req.Host = "demo.example.com"
	resp, err := e.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	// Response headers are through; the body is not: the request is in
	// flight and the activator must still count it.
	if resp.StatusCode != 200 || resp.Header.Get("x-backend") != "slow" {
		t.Fatalf("got %d from %q, want 200 from slow", resp.StatusCode, resp.Header.Get("x-backend"))
	}
	if held, inFlight := e.act.Stats(key); held != 0 || inFlight != 1 {
		t.Fatalf("while the response streams: Stats = %d held, %d in flight; want 0, 1", held, inFlight)
	}
	close(b.gate)
	body, err := io.ReadAll(resp.Body)
	if err != nil || !strings.HasPrefix(string(body), "backend=slow") {
		t.Fatalf("body %q, %v", body, err)
	}
	e.waitStats(t, key, 0, 0)
}

// TestActivatorHoldTimeout: no backend within the revision's hold timeout
// gives 503 with Retry-After.
func TestActivatorHoldTimeout(t *testing.T) {
	e := actStart(t, "demo")
	e.revision(t, "demo", 0, time.Second, 10)
	r := e.get(context.Background(), "demo.example.com", nil)
	if r.err != nil || r.code != 503 || r.retryAfter != "1" || !strings.Contains(r.body, "did not become ready") {
		t.Fatalf("got %d retry-after=%q %q %v; want 503 with Retry-After 1 (hold timeout)", r.code, r.retryAfter, r.body, r.err)
	}
	if r.took < time.Second || r.took >= actHoldBudget {
		t.Fatalf("answered after %v, want between the 1s hold timeout and the %v budget", r.took, actHoldBudget)
	}
}

// TestActivatorQueueOverflow: beyond the queue depth requests get 503 at
// once; the held ones are served when a backend arrives.
func TestActivatorQueueOverflow(t *testing.T) {
	e := actStart(t, "demo")
	key := e.revision(t, "demo", 0, 10*time.Second, 2)
	held := make(chan actResp, 2)
	for i := 0; i < 2; i++ {
		go func() { held <- e.get(context.Background(), "demo.example.com", nil) }()
	}
	e.waitStats(t, key, 2, 0)
	r := e.get(context.Background(), "demo.example.com", nil)
	if r.err != nil || r.code != 503 || r.retryAfter != "1" || !strings.Contains(r.body, "too many requests waiting") {
		t.Fatalf("third request: %d retry-after=%q %q %v; want 503 queue full", r.code, r.retryAfter, r.body, r.err)
	}
	b := actStartBackend(t, "b1", 0)
	e.setBackends(key, b)
	for i := 0; i < 2; i++ {
		if r := <-held; r.err != nil || r.code != 200 {
			t.Fatalf("held request %d: %d %q %v, want 200", i, r.code, r.body, r.err)
		}
	}
}

// TestActivatorClientCannotPickUpstream: neither x-envoy-original-dst-host,
// nor a forged x-thaw-revision, nor a header named like the metadata lets a
// client reach another revision's backend.
func TestActivatorClientCannotPickUpstream(t *testing.T) {
	e := actStart(t, "demo", "other")
	demo := e.revision(t, "demo", 0, 10*time.Second, 10)
	other := e.revision(t, "other", 0, 10*time.Second, 10)
	bd, bo := actStartBackend(t, "demo-1", 0), actStartBackend(t, "other-1", 0)
	e.setBackends(demo, bd)
	e.setBackends(other, bo)
	target := bo.ln.Addr().String()
	attempts := []map[string]string{
		{"x-envoy-original-dst-host": target},
		{"x-thaw-revision": "default/other"},
		{"thaw.activator": target, "x-thaw-destination": target},
		{"x-envoy-original-dst-host": target, "x-thaw-revision": "default/other"},
	}
	for i, h := range attempts {
		r := e.get(context.Background(), "demo.example.com", h)
		if r.err != nil || r.code != 200 || r.body != "backend=demo-1 revision=default/demo" {
			t.Errorf("attempt %d %v: %d %q %v; want 200 from demo-1 with revision default/demo", i, h, r.code, r.body, r.err)
		}
	}
	if got := bo.served.Load(); got != 0 {
		t.Fatalf("other revision's backend served %d requests sent to demo", got)
	}
	// The other revision itself still works.
	if r := e.get(context.Background(), "other.example.com", nil); r.code != 200 || r.body != "backend=other-1 revision=default/other" {
		t.Fatalf("other.example.com: %d %q %v", r.code, r.body, r.err)
	}
}

// TestActivatorDrain: a held request gets 503 at the drain deadline, and a
// request in flight completes although its ext_proc stream is closed.
func TestActivatorDrain(t *testing.T) {
	e := actStart(t, "demo", "cold")
	key := e.revision(t, "demo", 0, 10*time.Second, 10)
	cold := e.revision(t, "cold", 0, 10*time.Second, 10)
	b := actStartBackend(t, "slow", 0)
	b.gate = make(chan struct{})
	e.setBackends(key, b)

	req, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/", e.port), nil)
	req.Host = "demo.example.com"
	resp, err := e.client.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("in-flight request: %v %v", resp, err)
	}
	defer resp.Body.Close()
	heldDone := make(chan actResp, 1)
	go func() { heldDone <- e.get(context.Background(), "cold.example.com", nil) }()
	e.waitStats(t, cold, 1, 0)

	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := e.srv.Drain(ctx); err == nil {
		t.Fatal("Drain = nil, want the deadline error (a request was held)")
	}
	r := <-heldDone
	if r.err != nil || r.code != 503 || r.retryAfter != "1" || !strings.Contains(r.body, "shutting down") {
		t.Fatalf("held request: %d retry-after=%q %q %v; want 503 shutting down", r.code, r.retryAfter, r.body, r.err)
	}
	close(b.gate)
	body, err := io.ReadAll(resp.Body)
	if err != nil || string(body) != "backend=slow revision=default/demo" {
		t.Fatalf("in-flight request after drain: %q %v, want the full body", body, err)
	}
	if r := e.get(context.Background(), "demo.example.com", nil); r.code != 503 {
		t.Fatalf("new request after drain: %d %q, want 503", r.code, r.body)
	}
}

// actBootstrap is the static Envoy config: the wire contract of
// docs/activator.md with revisions as static clusters.
func actBootstrap(port, extprocPort int, budget time.Duration, revs []string) string {
	var vhosts, clusters []string
	for _, name := range revs {
		cluster := "rev_default_" + name
		vhosts = append(vhosts, harness.VirtualHost(name, []string{name + ".example.com"}, fmt.Sprintf(`match: {prefix: "/"}
route: {cluster: %[2]s, timeout: 0s}
request_headers_to_remove: [x-thaw-revision]
request_headers_to_add:
- header: {key: x-thaw-revision, value: default/%[1]s}
  append_action: OVERWRITE_IF_EXISTS_OR_ADD`, name, cluster)))
		clusters = append(clusters, fmt.Sprintf(`name: %[1]s
type: STATIC
connect_timeout: 1s
load_assignment:
  cluster_name: %[1]s
  endpoints: [{lb_endpoints: [{endpoint: {address: {envoy_internal_address: {server_listener_name: thaw_activator}}}}]}]
transport_socket:
  name: envoy.transport_sockets.internal_upstream
  typed_config:
    "@type": type.googleapis.com/envoy.extensions.transport_sockets.internal_upstream.v3.InternalUpstreamTransport
    transport_socket:
      name: envoy.transport_sockets.raw_buffer
      typed_config: {"@type": type.googleapis.com/envoy.extensions.transport_sockets.raw_buffer.v3.RawBuffer}`, cluster))
	}
	secs := strconv.FormatFloat(budget.Seconds(), 'f', -1, 64) + "s"
	clusters = append(clusters, `name: thaw_activator_dst
type: ORIGINAL_DST
lb_policy: CLUSTER_PROVIDED
connect_timeout: 1s
original_dst_lb_config:
  use_http_header: false
  metadata_key: {key: thaw.activator, path: [{key: destination}]}`,
		harness.GRPCCluster("thaw_extproc", extprocPort)+`
circuit_breakers:
  thresholds: [{max_connections: 100000, max_pending_requests: 100000, max_requests: 100000}]`)
	return harness.StaticBootstrap{
		InternalListeners: true,
		Listeners: []harness.HTTPListener{
			{Name: "thaw_http", Port: port, VirtualHosts: vhosts},
			{Name: "thaw_activator", Internal: true,
				VirtualHosts: []string{harness.CatchAll("all", "{cluster: thaw_activator_dst, timeout: 0s, idle_timeout: "+secs+"}")},
				// One line of JSON, itself a YAML mapping.
				Filters: []string{actExtProcFilterJSON(budget)}},
		},
		Clusters: clusters,
	}.String()
}

// actExtProcFilterJSON is the ext_proc HTTP filter exactly as thaw's xDS
// translation builds it (translate.ExtProcFilter), as one line of JSON for the
// YAML bootstrap.
func actExtProcFilterJSON(budget time.Duration) string {
	f, err := translate.ExtProcFilter(&translate.Config{ExtProcMessageTimeout: actMessageTimeout, HoldBudget: budget})
	if err != nil {
		panic(err)
	}
	b, err := protojson.Marshal(f)
	if err != nil {
		panic(err)
	}
	return string(b)
}
