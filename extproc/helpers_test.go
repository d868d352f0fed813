package extproc

import (
	"context"
	"net"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/thaw-dev/thaw/activator"
	"github.com/thaw-dev/thaw/revision"
)

var demo = revision.Key{Namespace: "default", Name: "demo"}

// env is a real activator fed by a real registry, the ext_proc server on a
// loopback gRPC server, and a gRPC client connected to it.
type env struct {
	t      testing.TB
	reg    *revision.Registry
	act    *activator.Activator
	srv    *Server
	client extprocv3.ExternalProcessorClient
	prom   *prometheus.Registry
}

func newEnv(t testing.TB, budget time.Duration) *env {
	t.Helper()
	return newEnvWith(t, budget, Limits{}, false)
}

// newEnvWith is newEnv with limits; tap installs TapHandle and the
// per-connection stream cap as thaw's shared gRPC server does.
func newEnvWith(t testing.TB, budget time.Duration, lim Limits, tap bool) *env {
	t.Helper()
	e := &env{t: t, reg: revision.NewRegistry(revision.RegistryOptions{}), prom: prometheus.NewRegistry()}
	e.act = activator.New(activator.Options{Registerer: e.prom, RevisionMetrics: true})
	e.srv = NewServer(ServerOptions{Activator: e.act, HoldBudget: budget, Registerer: e.prom, Limits: lim})
	ctx, cancel := context.WithCancel(context.Background())
	runDone := make(chan struct{})
	go func() { defer close(runDone); e.act.Run(ctx, e.reg) }()

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gopts := GRPCServerOptions()
	if tap {
		gopts = append(gopts, e.srv.GRPCServerOptions(0)...)
	}
	g := grpc.NewServer(gopts...)
	e.srv.Register(g)
	go g.Serve(ln)
	conn, err := grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	e.client = extprocv3.NewExternalProcessorClient(conn)
	t.Cleanup(func() {
		conn.Close()
		g.Stop()
		cancel()
		<-runDone
	})
	return e
}

// revision adds demo with the given limits and backends (127.0.0.N:8080).
func (e *env) revision(key revision.Key, cc int, hold time.Duration, depth int, backends ...string) {
	e.t.Helper()
	s := revision.DefaultSpec()
	s.Hosts, s.Port = []string{key.Name + ".example.com"}, 8080
	s.ContainerConcurrency, s.HoldTimeout, s.QueueDepth = cc, hold, depth
	if err := s.Validate(); err != nil {
		e.t.Fatal(err)
	}
	e.reg.Upsert(key, s)
	e.setBackends(key, backends...)
	e.reg.SetSynced()
	e.waitApplied(key, len(backends))
}

func (e *env) setBackends(key revision.Key, addrs ...string) {
	bs := make([]revision.Backend, 0, len(addrs))
	for _, a := range addrs {
		bs = append(bs, revision.Backend{Address: a, Port: 8080, Ready: true})
	}
	e.reg.SetBackends(key, bs)
}

// waitApplied waits (bounded) until the activator serves key with n pods:
// Run applies registry changes asynchronously.
func (e *env) waitApplied(key revision.Key, pods int) {
	e.t.Helper()
	want := float64(pods)
	for i := 0; i < 2000; i++ {
		if got, ok := gaugeValue(e.prom, "thaw_activator_pods", key.String()); ok && got == want {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	e.t.Fatalf("activator did not apply %s with %d pods within 10s", key, pods)
}

// waitStats waits (bounded) until Stats(key) equals (held, inFlight).
func (e *env) waitStats(key revision.Key, held, inFlight int) {
	e.t.Helper()
	for i := 0; i < 2000; i++ {
		h, f := e.act.Stats(key)
		if h == held && f == inFlight {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	h, f := e.act.Stats(key)
	e.t.Fatalf("Stats(%s) = %d held, %d in flight after 10s; want %d, %d", key, h, f, held, inFlight)
}

func gaugeValue(g prometheus.Gatherer, name, rev string) (float64, bool) {
	mfs, err := g.Gather()
	if err != nil {
		return 0, false
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "revision" && l.GetValue() == rev {
					return m.GetGauge().GetValue(), true
				}
			}
		}
	}
	return 0, false
}

func counterValue(g prometheus.Gatherer, name, outcome string) float64 {
	mfs, _ := g.Gather()
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "outcome" && l.GetValue() == outcome {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// headers builds the request-headers message Envoy sends, with the given
// header pairs.
func headers(kv ...string) *extprocv3.ProcessingRequest {
	hm := &corev3.HeaderMap{}
	hm.Headers = append(hm.Headers,
		&corev3.HeaderValue{Key: ":method", RawValue: []byte("GET")},
		&corev3.HeaderValue{Key: ":path", RawValue: []byte("/")})
	for i := 0; i+1 < len(kv); i += 2 {
		hm.Headers = append(hm.Headers, &corev3.HeaderValue{Key: kv[i], RawValue: []byte(kv[i+1])})
	}
	return &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_RequestHeaders{
		RequestHeaders: &extprocv3.HttpHeaders{Headers: hm, EndOfStream: true}}}
}

// open starts a stream with a deadline and sends req.
func (e *env) open(req *extprocv3.ProcessingRequest) (extprocv3.ExternalProcessor_ProcessClient, context.CancelFunc) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	st, err := e.client.Process(ctx)
	if err != nil {
		cancel()
		e.t.Fatal(err)
	}
	if err := st.Send(req); err != nil {
		cancel()
		e.t.Fatal(err)
	}
	e.t.Cleanup(cancel)
	return st, cancel
}

func recv(t testing.TB, st extprocv3.ExternalProcessor_ProcessClient) *extprocv3.ProcessingResponse {
	t.Helper()
	resp, err := st.Recv()
	if err != nil {
		t.Fatalf("Recv: %v", err)
	}
	return resp
}

func wantProto(t testing.TB, what string, want, got any) {
	t.Helper()
	if d := cmp.Diff(want, got, protocmp.Transform()); d != "" {
		t.Fatalf("%s mismatch (-want +got):\n%s", what, d)
	}
}
