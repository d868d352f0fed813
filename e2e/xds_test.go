//go:build e2e

package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extprocsvc "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	metricssvc "github.com/envoyproxy/go-control-plane/envoy/service/metrics/v3"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/thaw-dev/thaw/e2e/harness"
	"github.com/thaw-dev/thaw/envoy"
	"github.com/thaw-dev/thaw/modsvc"
	"github.com/thaw-dev/thaw/revision"
	"github.com/thaw-dev/thaw/xds"
	"github.com/thaw-dev/thaw/xds/translate"
)

// xdsEnv is thaw's xDS server, a stub ext_proc server and a stats drain on
// one loopback gRPC server, plus a real Envoy started from the shipped
// bootstrap.
type xdsEnv struct {
	srv      *xds.Server
	prom     *prometheus.Registry
	reg      *revision.Registry
	grpcAddr string
	httpPort int
	extproc  *stubExtProc
	envoy    *harness.Envoy
	// tls makes Envoy use mutual TLS (set with grpcOpts' credentials).
	tls *envoy.ClientTLS
	// modsvc serves the activator module's state and reports (module).
	modsvc      *modsvc.Server
	moduleServe func()
}

type xdsEnvOptions struct {
	logger *zap.Logger
	// setup fills the registry before it is marked synced.
	setup func(reg *revision.Registry)
	// skipEnvoy leaves starting Envoy to the caller.
	skipEnvoy bool
	// holdoff is the registry's batching holdoff (0: publish every change
	// at once, which is quadratic for thousands of revisions).
	holdoff time.Duration
	// grpcOpts are added to the gRPC server's options (TLS credentials).
	grpcOpts []grpc.ServerOption
	// tls is Envoy's side of mutual TLS (nil: plaintext).
	tls *envoy.ClientTLS
	// inlineRoutes sets translate.Config.InlineRoutes (every virtual host in
	// one route configuration, as before VHDS).
	inlineRoutes bool
	// stageTimeout sets translate.Config.StageTimeout when > 0.
	stageTimeout time.Duration
	// removalFirst sets translate.Config.RemovalFirst (on by itself only
	// with the activator module).
	removalFirst bool
	// module makes Envoy load bin/thaw-activator.so on revision routes,
	// fed by a modsvc.Server (xds_module_env_test.go).
	module bool
}

func startXDSEnv(t testing.TB, o xdsEnvOptions) *xdsEnv {
	t.Helper()
	if o.logger == nil {
		o.logger = zap.NewNop()
	}
	env := &xdsEnv{httpPort: harness.PickPort(t), extproc: &stubExtProc{}, tls: o.tls}
	env.reg = revision.NewRegistry(revision.RegistryOptions{Logger: o.logger, Holdoff: o.holdoff})
	cfg := translate.DefaultConfig()
	cfg.HTTPAddress = "127.0.0.1"
	cfg.HTTPPort = uint32(env.httpPort)
	cfg.InlineRoutes = o.inlineRoutes
	cfg.RemovalFirst = o.removalFirst
	if o.stageTimeout > 0 {
		cfg.StageTimeout = o.stageTimeout
	}
	if o.module {
		env.moduleConfig(t, &cfg, o.logger)
	}
	env.prom = prometheus.NewRegistry()
	env.srv = xds.NewServer(xds.ServerOptions{Logger: o.logger, Config: cfg, Registerer: env.prom})
	if o.module {
		env.startModuleService(t)
	}
	// A whole stats flush is one message (envoy/stats-sink.yaml).
	g := grpc.NewServer(append([]grpc.ServerOption{grpc.MaxRecvMsgSize(64 << 20)}, o.grpcOpts...)...)
	env.srv.Register(g)
	extprocsvc.RegisterExternalProcessorServer(g, env.extproc)
	metricssvc.RegisterMetricsServiceServer(g, statsDrain{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	env.grpcAddr = ln.Addr().String()
	go g.Serve(ln)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- env.srv.Run(ctx, env.reg) }()
	regDone := make(chan struct{})
	go func() { env.reg.Run(ctx); close(regDone) }()
	if o.setup != nil {
		o.setup(env.reg)
	}
	env.reg.SetSynced()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("xds Run: %v", err)
		}
		<-regDone
		stopGRPC(g) // after Run: its streams are ending
	})
	if !o.skipEnvoy {
		env.envoy = env.startEnvoy(t, "e2e-xds")
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := env.srv.WaitFirstAck(ctx); err != nil {
			t.Fatalf("Envoy never ACKed the first snapshot: %v", err)
		}
	}
	return env
}

// startEnvoy renders the shipped bootstrap for this env and starts Envoy.
func (env *xdsEnv) startEnvoy(t testing.TB, nodeID string) *harness.Envoy {
	t.Helper()
	boot, err := envoy.RenderBootstrap(envoy.BootstrapParams{NodeID: nodeID, XDSAddress: env.grpcAddr,
		AdminPort: uint32(harness.PickPort(t)), TLS: env.tls})
	if err != nil {
		t.Fatal(err)
	}
	return harness.StartEnvoy(t, harness.EnvoyOptions{Bootstrap: string(boot), LogLevel: "warn"})
}

// confirm waits until every connected Envoy ACKed key's current routing.
func (env *xdsEnv) confirm(t testing.TB, key revision.Key) {
	t.Helper()
	gen := env.reg.Snapshot().Get(key).Generation
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := env.srv.WaitConfirmed(ctx, key, gen); err != nil {
		t.Fatalf("revision %s generation %d not confirmed: %v (nodes %+v)", key, gen, err, env.srv.Nodes())
	}
}

// noNACKs fails if any connected node rejected anything.
func (env *xdsEnv) noNACKs(t testing.TB) {
	t.Helper()
	for _, n := range env.srv.Nodes() {
		if len(n.NACKs) > 0 {
			t.Fatalf("node %s NACKed: %+v", n.ID, n.NACKs)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	stats, err := env.envoy.Stats(ctx, "update_rejected")
	if err != nil {
		t.Fatal(err)
	}
	for name, v := range stats {
		if v != 0 {
			t.Fatalf("Envoy %s = %d", name, v)
		}
	}
}

// backend is a loopback HTTP server that names itself and echoes the
// x-thaw-revision header it received.
type backend struct {
	name string
	port int32
	hits atomic.Int64
}

func startBackend(t testing.TB, name string) *backend {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &backend{name: name, port: int32(ln.Addr().(*net.TCPAddr).Port)}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b.hits.Add(1)
		// Every copy, so a forged copy left beside thaw's shows.
		fmt.Fprintf(w, "backend=%s revision=%s", b.name, strings.Join(r.Header.Values("x-thaw-revision"), ","))
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return b
}

func (b *backend) addr() revision.Backend {
	return revision.Backend{Address: "127.0.0.1", Port: b.port, Ready: true}
}

// stubExtProc answers every request-headers message with destination
// metadata pointing at dest (a stand-in for the activator) and records the
// x-thaw-revision header it saw. An empty dest answers CONTINUE without
// metadata; a nil dest fails the stream.
type stubExtProc struct {
	extprocsvc.UnimplementedExternalProcessorServer
	dest atomic.Pointer[string]

	mu        sync.Mutex
	revisions []string
	ended     atomic.Value // time.Time the last stream ended (experiments)
}

func (s *stubExtProc) Process(stream extprocsvc.ExternalProcessor_ProcessServer) error {
	for {
		req, err := stream.Recv()
		if err != nil {
			s.ended.Store(time.Now())
			return nil // end of request (stream-close optimization off) or Envoy gone
		}
		hs := req.GetRequestHeaders()
		if hs == nil {
			continue
		}
		s.mu.Lock()
		s.revisions = append(s.revisions, headerValues(hs.GetHeaders().GetHeaders(), "x-thaw-revision"))
		s.mu.Unlock()
		dest := s.dest.Load()
		if dest == nil {
			return errors.New("stub ext_proc: no destination")
		}
		var md *structpb.Struct
		if *dest != "" {
			if md, err = structpb.NewStruct(map[string]any{translate.MetadataNamespace: map[string]any{translate.MetadataDestinationKey: *dest}}); err != nil {
				return err
			}
		}
		if err := stream.Send(&extprocsvc.ProcessingResponse{
			Response: &extprocsvc.ProcessingResponse_RequestHeaders{RequestHeaders: &extprocsvc.HeadersResponse{
				Response: &extprocsvc.CommonResponse{Status: extprocsvc.CommonResponse_CONTINUE, ClearRouteCache: true},
			}},
			DynamicMetadata: md,
		}); err != nil {
			return err
		}
	}
}

func (s *stubExtProc) seen() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.revisions...)
}

// headerValues returns every value of key in hs, joined by commas.
func headerValues(hs []*corev3.HeaderValue, key string) string {
	var vs []string
	for _, h := range hs {
		if strings.EqualFold(h.GetKey(), key) {
			vs = append(vs, headerValue([]*corev3.HeaderValue{h}, key))
		}
	}
	return strings.Join(vs, ",")
}

func headerValue(hs []*corev3.HeaderValue, key string) string {
	for _, h := range hs {
		if strings.EqualFold(h.GetKey(), key) {
			if len(h.GetRawValue()) > 0 {
				return string(h.GetRawValue())
			}
			return h.GetValue()
		}
	}
	return ""
}

// statsDrain accepts the metrics_service stream and discards it (the stats
// sink is tested elsewhere).
type statsDrain struct {
	metricssvc.UnimplementedMetricsServiceServer
}

func (statsDrain) StreamMetrics(stream metricssvc.MetricsService_StreamMetricsServer) error {
	for {
		if _, err := stream.Recv(); err != nil {
			return nil
		}
	}
}

var httpClient = &http.Client{Timeout: 10 * time.Second}

// get sends GET / with a Host and extra headers through Envoy's thaw_http
// listener and returns status and body.
func (env *xdsEnv) get(t testing.TB, host string, headers map[string]string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/", env.httpPort), nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	for k, v := range headers {
		for _, one := range strings.Split(v, "\n") { // one header per line
			req.Header.Add(k, one)
		}
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", host, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

// waitServed polls host until it answers 200 with a body containing want
// (the listener and route may still be warming right after an ACK). It
// fails after 200 attempts or 20 s.
func (env *xdsEnv) waitServed(t testing.TB, host, want string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	var code int
	var body string
	for i := 0; i < 200 && time.Now().Before(deadline); i++ {
		if code, body = env.get(t, host, nil); code == 200 && strings.Contains(body, want) {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s never served %q: last answer %d %q", host, want, code, body)
}

// steering are client headers that must never choose the upstream: a forged
// revision (two copies: thaw's overwrite must replace both), and every
// address header Envoy or its clusters might honour.
func steering(target *backend) map[string]string {
	addr := fmt.Sprintf("127.0.0.1:%d", target.port)
	return map[string]string{
		"x-thaw-revision":                "evil/other\nevil/another",
		"x-envoy-original-dst-host":      addr,
		"x-envoy-upstream-host":          addr,
		"x-envoy-internal":               "true",
		"x-forwarded-host":               addr,
		"x-envoy-upstream-rq-timeout-ms": "1",
	}
}

func TestXDSEnvoyModeFlips(t *testing.T) {
	warm := startBackend(t, "warm")
	held := startBackend(t, "activator-choice")
	attacker := startBackend(t, "attacker")
	key := revision.Key{Namespace: "e2e", Name: "hello"}
	env := startXDSEnv(t, xdsEnvOptions{logger: zaptest.NewLogger(t, zaptest.Level(zap.InfoLevel)), setup: func(reg *revision.Registry) {
		spec := revision.DefaultSpec()
		spec.Hosts = []string{"hello.test"}
		spec.Port = warm.port
		reg.Upsert(key, spec)
		reg.SetBackends(key, []revision.Backend{warm.addr()})
		reg.SetMode(key, revision.ModeServe)
	}})
	heldAddr := fmt.Sprintf("127.0.0.1:%d", held.port)
	env.extproc.dest.Store(&heldAddr)
	if nodes := env.srv.Nodes(); len(nodes) != 1 || nodes[0].ID != "e2e-xds" || !nodes[0].Delta {
		t.Fatalf("nodes = %+v, want one delta stream from e2e-xds", nodes)
	}
	env.confirm(t, key)
	env.waitServed(t, "hello.test", "backend=warm")

	t.Run("serve mode reaches the backend and sets the revision header", func(t *testing.T) {
		code, body := env.get(t, "hello.test:8080", steering(attacker))
		if code != 200 || body != "backend=warm revision=e2e/hello" {
			t.Fatalf("got %d %q, want the warm backend with x-thaw-revision e2e/hello", code, body)
		}
	})

	t.Run("proxy mode goes through ext_proc to the chosen backend", func(t *testing.T) {
		env.reg.SetMode(key, revision.ModeProxy)
		env.confirm(t, key)
		before := len(env.extproc.seen())
		code, body := env.get(t, "hello.test", nil)
		if code != 200 || body != "backend=activator-choice revision=e2e/hello" {
			t.Fatalf("got %d %q, want the backend the ext_proc stub chose", code, body)
		}
		code, body = env.get(t, "HELLO.test", steering(attacker))
		if code != 200 || !strings.HasPrefix(body, "backend=activator-choice") {
			t.Fatalf("with steering headers got %d %q, want the ext_proc choice", code, body)
		}
		seen := env.extproc.seen()[before:]
		if len(seen) != 2 || seen[0] != "e2e/hello" || seen[1] != "e2e/hello" {
			t.Fatalf("ext_proc saw x-thaw-revision %q, want e2e/hello twice (client copy removed)", seen)
		}
	})

	t.Run("proxy mode fails closed without an activator answer", func(t *testing.T) {
		empty := ""
		env.extproc.dest.Store(&empty)
		if code, body := env.get(t, "hello.test", steering(attacker)); code < 500 {
			t.Fatalf("CONTINUE without destination metadata: got %d %q, want a 5xx", code, body)
		}
		// An ext_proc stream error means the activator is unreachable: the
		// request fails over to the ready backend at priority 1.
		env.extproc.dest.Store(nil)
		if code, body := env.get(t, "hello.test", steering(attacker)); code != 200 || body != "backend=warm revision=e2e/hello" {
			t.Fatalf("ext_proc stream error: got %d %q, want the warm backend (failover to priority 1)", code, body)
		}
		env.extproc.dest.Store(&heldAddr)
	})

	t.Run("flip back to serve mode", func(t *testing.T) {
		env.reg.SetMode(key, revision.ModeServe)
		env.confirm(t, key)
		before := len(env.extproc.seen())
		code, body := env.get(t, "hello.test", steering(attacker))
		if code != 200 || body != "backend=warm revision=e2e/hello" {
			t.Fatalf("got %d %q, want the warm backend", code, body)
		}
		if n := len(env.extproc.seen()) - before; n != 0 {
			t.Fatalf("ext_proc called %d times in serve mode", n)
		}
	})

	t.Run("unknown host is 404", func(t *testing.T) {
		if code, body := env.get(t, "nobody.test", steering(attacker)); code != 404 {
			t.Fatalf("got %d %q, want 404", code, body)
		}
	})

	if n := attacker.hits.Load(); n != 0 {
		t.Fatalf("a client header steered %d requests to the attacker's backend", n)
	}
	env.noNACKs(t)
}

func TestXDSEnvoyAddAndRemoveRevision(t *testing.T) {
	first := startBackend(t, "first")
	second := startBackend(t, "second")
	keyA := revision.Key{Namespace: "e2e", Name: "a"}
	keyB := revision.Key{Namespace: "e2e", Name: "b"}
	upsert := func(reg *revision.Registry, key revision.Key, host string, b *backend) {
		spec := revision.DefaultSpec()
		spec.Hosts = []string{host}
		reg.SetBackends(key, []revision.Backend{b.addr()})
		reg.SetMode(key, revision.ModeServe)
		reg.Upsert(key, spec) // last: one complete snapshot
	}
	env := startXDSEnv(t, xdsEnvOptions{logger: zaptest.NewLogger(t, zaptest.Level(zap.InfoLevel)),
		setup: func(reg *revision.Registry) { upsert(reg, keyA, "a.test", first) }})
	env.waitServed(t, "a.test", "backend=first")
	if code, _ := env.get(t, "b.test", nil); code != 404 {
		t.Fatalf("b.test before it exists: %d, want 404", code)
	}

	upsert(env.reg, keyB, "b.test", second)
	env.confirm(t, keyB)
	env.waitServed(t, "b.test", "backend=second")

	env.reg.Delete(keyB)
	deadline := time.Now().Add(20 * time.Second)
	code := 0
	for i := 0; i < 200 && time.Now().Before(deadline); i++ {
		if code, _ = env.get(t, "b.test", nil); code == 404 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if code != 404 {
		t.Fatalf("b.test after delete: %d, want 404", code)
	}
	if code, body := env.get(t, "a.test", nil); code != 200 || !strings.Contains(body, "backend=first") {
		t.Fatalf("a.test after deleting b: %d %q", code, body)
	}
	env.noNACKs(t)
}

// BenchmarkXDSEnvoy10k measures thaw's xDS server against a real Envoy at
// 10,000 revisions (half serve mode, half proxy mode). Reported:
//
//   - first-apply-ms: translating and caching the synced snapshot;
//
//   - sync-ms, sync-envoy-cpu-s: Envoy process start to its ACK of the
//     complete first snapshot, and the CPU Envoy used for it;
//
//   - flip-bytes: bytes the server sent for one mode flip (one response);
//
//   - push-ack-p50/p99-ms: the server's thaw_xds_flip_to_ack_seconds
//     (changed ClusterLoadAssignment put in the cache to the last ACK),
//     estimated from its buckets;
//
//   - flip-e2e-p50/p99-ms: registry SetMode to WaitConfirmed returning,
//     including the registry's production holdoff (revision.DefaultHoldoff)
//     and snapshot publication; ns/op is the mean of the same;
//
//   - add-bytes, remove-bytes, add-first-request-ms: one revision added
//     to the 10,000 and removed again (addAndRemove): bytes of every xDS
//     response the change caused, and Upsert to Envoy's first 200 for the
//     new host; add-remove-envoy-cpu-ms: Envoy's CPU for both changes;
//
//   - rss-MiB, heap-MiB: this process (registry, xDS server, test
//     scaffolding) after the flips; rss-before-MiB: the same process
//     before creating anything (binary, Envoy API descriptors);
//     rss-scavenged-MiB: after debug.FreeOSMemory (idle heap returned).
//
// BenchmarkXDSEnvoy10kInlineRoutes reports the same with
// translate.Config.InlineRoutes: the one route configuration of every virtual
// host that thaw sent before VHDS (and still sends to state-of-the-world
// Envoys), for comparison.
//
//	go test -tags e2e -run '^$' -bench XDSEnvoy10k -benchtime 200x ./e2e/
func BenchmarkXDSEnvoy10k(b *testing.B) { benchXDSEnvoy10k(b, false) }

// BenchmarkXDSEnvoy10kInlineRoutes: see BenchmarkXDSEnvoy10k.
func BenchmarkXDSEnvoy10kInlineRoutes(b *testing.B) { benchXDSEnvoy10k(b, true) }

func benchXDSEnvoy10k(b *testing.B, inlineRoutes bool) {
	const n = 10000
	runtime.GC()
	baseRSS := rssBytes(b)
	keys := make([]revision.Key, n)
	env := startXDSEnv(b, xdsEnvOptions{skipEnvoy: true, holdoff: revision.DefaultHoldoff, inlineRoutes: inlineRoutes, setup: func(reg *revision.Registry) {
		for i := range n {
			keys[i] = revision.Key{Namespace: fmt.Sprintf("ns-%d", i%50), Name: fmt.Sprintf("app-%d", i)}
			spec := revision.DefaultSpec()
			spec.Hosts = []string{fmt.Sprintf("app-%d.ns-%d.example.com", i, i%50)}
			reg.Upsert(keys[i], spec)
			reg.SetBackends(keys[i], []revision.Backend{{Address: "127.0.0.1", Port: int32(20000 + i%1000), Ready: true}})
			if i%2 == 0 {
				reg.SetMode(keys[i], revision.ModeServe)
			}
		}
	}})
	// The server applies the synced snapshot before it answers anyone:
	// wait for that, so sync time is Envoy's, not the translation's.
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	applyStart := time.Now()
	for i := 0; !env.srv.Status(keys[n-1]).Applied; i++ {
		if i > 12000 || ctx.Err() != nil {
			b.Fatal("synced snapshot never applied")
		}
		time.Sleep(5 * time.Millisecond)
	}
	firstApply := time.Since(applyStart)

	start := time.Now()
	boot, err := envoy.RenderBootstrap(envoy.BootstrapParams{NodeID: "bench", XDSAddress: env.grpcAddr, AdminPort: uint32(harness.PickPort(b))})
	if err != nil {
		b.Fatal(err)
	}
	env.envoy = harness.StartEnvoy(b, harness.EnvoyOptions{Bootstrap: string(boot), LogLevel: "warn", SkipWaitReady: true})
	if err := env.srv.WaitFirstAck(ctx); err != nil {
		b.Fatalf("first ACK: %v", err)
	}
	sync := time.Since(start)
	envoyCPU := cpuSeconds(b, env.envoy.Pid())

	pushesBefore, bytesBefore := pushed(b, env.prom, "endpoints")
	env.flip(ctx, b, keys[1], revision.ModeServe)
	pushesAfter, bytesAfter := pushed(b, env.prom, "endpoints")
	if pushesAfter-pushesBefore != 1 {
		b.Errorf("one flip sent %v responses, want 1", pushesAfter-pushesBefore)
	}

	lat := make([]time.Duration, 0, b.N)
	for i := 0; b.Loop(); i++ {
		key := keys[(i*7919)%n]
		mode := revision.ModeServe
		if env.reg.Snapshot().Get(key).Mode == revision.ModeServe {
			mode = revision.ModeProxy
		}
		t0 := time.Now()
		env.flip(ctx, b, key, mode)
		lat = append(lat, time.Since(t0))
	}
	slices.Sort(lat)
	grown := env.addAndRemove(ctx, b, revision.Key{Namespace: "ns-grow", Name: "added"}, "added.ns-grow.example.com")
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	ms2 := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(float64(firstApply.Milliseconds()), "first-apply-ms")
	b.ReportMetric(float64(sync.Milliseconds()), "sync-ms")
	b.ReportMetric(envoyCPU, "sync-envoy-cpu-s")
	b.ReportMetric(bytesAfter-bytesBefore, "flip-bytes")
	b.ReportMetric(histQuantile(b, env.prom, "thaw_xds_flip_to_ack_seconds", 0.5)*1000, "push-ack-p50-ms")
	b.ReportMetric(histQuantile(b, env.prom, "thaw_xds_flip_to_ack_seconds", 0.99)*1000, "push-ack-p99-ms")
	b.ReportMetric(grown.addBytes, "add-bytes")
	b.ReportMetric(grown.removeBytes, "remove-bytes")
	b.ReportMetric(ms2(grown.firstRequest), "add-first-request-ms")
	b.ReportMetric(grown.envoyCPU*1000, "add-remove-envoy-cpu-ms")
	b.ReportMetric(ms2(lat[len(lat)/2]), "flip-e2e-p50-ms")
	b.ReportMetric(ms2(lat[len(lat)*99/100]), "flip-e2e-p99-ms")
	b.ReportMetric(float64(rssBytes(b))/(1<<20), "rss-MiB")
	b.ReportMetric(float64(baseRSS)/(1<<20), "rss-before-MiB")
	// Idle heap the runtime has not yet returned to the OS (startup
	// transients) is most of the difference between rss and heap:
	// returned at once, what remains is the steady state.
	debug.FreeOSMemory()
	b.ReportMetric(float64(rssBytes(b))/(1<<20), "rss-scavenged-MiB")
	b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "heap-MiB")
	env.noNACKs(b)
}

// flip sets key's mode, waits for the registry to publish it (holdoff),
// then for every Envoy's ACK.
func (env *xdsEnv) flip(ctx context.Context, tb testing.TB, key revision.Key, mode revision.Mode) {
	tb.Helper()
	env.reg.SetMode(key, mode)
	snap, err := env.reg.WaitFor(ctx, func(s *revision.Snapshot) bool { return s.Get(key).Mode == mode })
	if err != nil {
		tb.Fatalf("registry never published %s mode %s: %v", key, mode, err)
	}
	if err := env.srv.WaitConfirmed(ctx, key, snap.Get(key).Generation); err != nil {
		tb.Fatalf("%s mode %s not confirmed: %v", key, mode, err)
	}
}

// histQuantile estimates a quantile of a histogram in reg
// (harness.HistogramQuantile: PromQL's histogram_quantile).
func histQuantile(tb testing.TB, reg *prometheus.Registry, name string, q float64) float64 {
	tb.Helper()
	fams, err := reg.Gather()
	if err != nil {
		tb.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != name || len(f.GetMetric()) == 0 {
			continue
		}
		h := f.GetMetric()[0].GetHistogram()
		var bounds, cum []float64
		for _, bk := range h.GetBucket() {
			bounds, cum = append(bounds, bk.GetUpperBound()), append(cum, float64(bk.GetCumulativeCount()))
		}
		v, _ := harness.HistogramQuantile(bounds, cum, float64(h.GetSampleCount()), q)
		return v
	}
	tb.Fatalf("histogram %s not found", name)
	return 0
}

// pushed returns the xDS server's response count and bytes for one short
// type name ("endpoints"), or summed over all types when typ is "".
func pushed(tb testing.TB, reg *prometheus.Registry, typ string) (pushes, bytes float64) {
	tb.Helper()
	fams, err := reg.Gather()
	if err != nil {
		tb.Fatal(err)
	}
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			if typ != "" && (len(m.GetLabel()) != 1 || m.GetLabel()[0].GetValue() != typ) {
				continue
			}
			switch f.GetName() {
			case "thaw_xds_pushes_total":
				pushes += m.GetCounter().GetValue()
			case "thaw_xds_pushed_bytes_total":
				bytes += m.GetCounter().GetValue()
			}
		}
	}
	return pushes, bytes
}

// cpuSeconds returns the user+system CPU time a process has used, from
// /proc/<pid>/stat (clock ticks of 1/100 s; harness.StatCPUTime).
func cpuSeconds(tb testing.TB, pid int) float64 {
	tb.Helper()
	d, err := harness.StatCPUTime(pid)
	if err != nil {
		tb.Fatal(err)
	}
	return d.Seconds()
}

// rssBytes returns this process's resident set size from /proc.
func rssBytes(tb testing.TB) int64 {
	tb.Helper()
	n, err := harness.RSS(os.Getpid())
	if err != nil {
		tb.Fatal(err)
	}
	return n
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
