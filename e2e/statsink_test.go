//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"math"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap/zaptest"
	"google.golang.org/grpc"

	"github.com/thaw-dev/thaw/autoscaler"
	"github.com/thaw-dev/thaw/autoscaler/statsink"
	"github.com/thaw-dev/thaw/e2e/harness"
	"github.com/thaw-dev/thaw/internal/app"
	"github.com/thaw-dev/thaw/revision"
)

// statsinkSamples is the e2e Recorder: it keeps the samples of one revision and
// averages them over time windows.
type statsinkSamples struct {
	key     revision.Key
	mu      sync.Mutex
	samples []autoscaler.Sample
}

func (l *statsinkSamples) Record(s autoscaler.Sample) {
	if s.Revision != l.key {
		return
	}
	l.mu.Lock()
	l.samples = append(l.samples, s)
	l.mu.Unlock()
}

var _ autoscaler.Recorder = (*statsinkSamples)(nil)

// window returns the samples with Time in (from, to].
func (l *statsinkSamples) window(from, to time.Time) []autoscaler.Sample {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []autoscaler.Sample
	for _, s := range l.samples {
		if s.Time.After(from) && !s.Time.After(to) {
			out = append(out, s)
		}
	}
	return out
}

// statsinkLoad runs n clients, each sending one slow request after the other;
// client i starts at i*hold/n so that request starts are spread evenly.
type statsinkLoad struct {
	mu     sync.Mutex
	starts []time.Time
	errors int
}

func (g *statsinkLoad) run(ctx context.Context, url string, n int, hold time.Duration) *sync.WaitGroup {
	client := &http.Client{Timeout: hold + 20*time.Second,
		Transport: &http.Transport{MaxIdleConnsPerHost: n + 1}}
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Duration(i) * hold / time.Duration(n)):
			}
			for ctx.Err() == nil {
				start := time.Now()
				resp, err := client.Get(url)
				g.mu.Lock()
				g.starts = append(g.starts, start)
				if err != nil || resp.StatusCode != http.StatusOK {
					g.errors++
				}
				g.mu.Unlock()
				if err == nil {
					resp.Body.Close()
				}
			}
		})
	}
	return &wg
}

// startsIn counts requests started in (from, to].
func (g *statsinkLoad) startsIn(from, to time.Time) (n, errors int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, s := range g.starts {
		if s.After(from) && !s.After(to) {
			n++
		}
	}
	return n, g.errors
}

// TestStatsinkWithEnvoy: real Envoy proxies N concurrent slow requests to a
// local backend through cluster rev_default_demo and streams its stats (with
// envoy/stats-sink.yaml as is) to an in-process sink. The concurrency the
// sink reports must be N within 15% and the request rate the generator's
// achieved rate within 10%.
func TestStatsinkWithEnvoy(t *testing.T) {
	const hold = 2 * time.Second
	key := revision.Key{Namespace: "default", Name: "demo"}
	cluster := revision.ClusterName(key)
	if cluster != "rev_default_demo" {
		t.Fatalf("ClusterName(%v) = %q, want rev_default_demo", key, cluster)
	}

	backend := statsinkSlowBackend(t, hold)
	rec := &statsinkSamples{key: key}
	reg := prometheus.NewRegistry()
	sink := statsink.New(statsink.Options{Logger: zaptest.NewLogger(t), Recorder: rec, Registerer: reg})
	gs := grpc.NewServer(app.SharedGRPCServerOptions()...)
	sink.Register(gs)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go gs.Serve(ln)
	t.Cleanup(gs.Stop)

	snippet, err := os.ReadFile(filepath.Join(harness.RepoRoot(), "envoy", "stats-sink.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	listen := harness.PickPort(t)
	harness.StartEnvoy(t, harness.EnvoyOptions{Bootstrap: harness.StaticBootstrap{
		NodeID: "e2e-statsink",
		Listeners: []harness.HTTPListener{{Name: "thaw_http", Port: listen,
			VirtualHosts: []string{harness.CatchAll("demo", "{cluster: "+cluster+", timeout: 0s}")}}},
		Clusters: []string{harness.StaticCluster(cluster, backend), harness.GRPCCluster("thaw_stats", ln.Addr().(*net.TCPAddr).Port)},
		// envoy/stats-sink.yaml as it is: it needs the thaw_stats cluster.
		Tail: string(snippet),
	}.String()})
	statsinkWaitMessages(t, reg)

	url := fmt.Sprintf("http://127.0.0.1:%d/", listen)
	for _, n := range []int{5, 20} {
		t.Run(fmt.Sprintf("N=%d", n), func(t *testing.T) {
			gen := &statsinkLoad{}
			ctx, cancel := context.WithCancel(context.Background())
			wg := gen.run(ctx, url, n, hold)
			defer func() { cancel(); wg.Wait() }()

			// Steady once every client has started and Envoy flushed once.
			steady := time.Now().Add(hold + 1500*time.Millisecond)
			end := steady.Add(8 * time.Second)
			time.Sleep(time.Until(end) + 2*time.Second) // the flush after end arrived
			samples := rec.window(steady, end)
			if len(samples) < 5 {
				t.Fatalf("%d samples in the 8 s window, want about 8", len(samples))
			}
			var conc float64
			for _, s := range samples {
				conc += s.Concurrency
			}
			conc /= float64(len(samples))
			t.Logf("concurrency: mean %.2f over %d samples (want %d ±15%%)", conc, len(samples), n)
			if math.Abs(conc-float64(n)) > 0.15*float64(n) {
				t.Errorf("mean concurrency %.2f, want %d ±15%%", conc, n)
			}

			// Rate between the first and last sample of the window: sum of
			// deltas reported after `from` over the same interval's starts.
			from, to := samples[0].Time, samples[len(samples)-1].Time
			var reqs float64
			for _, s := range samples[1:] {
				reqs += s.Requests
			}
			secs := to.Sub(from).Seconds()
			started, errs := gen.startsIn(from, to)
			gotRPS, genRPS := reqs/secs, float64(started)/secs
			t.Logf("rps: sink %.2f (%v requests), generator %.2f (%d starts) over %.2f s; errors %d",
				gotRPS, reqs, genRPS, started, secs, errs)
			if errs > 0 {
				t.Errorf("%d generator requests failed", errs)
			}
			if genRPS == 0 || math.Abs(gotRPS-genRPS) > 0.10*genRPS {
				t.Errorf("sink rps %.2f, generator %.2f: want within 10%%", gotRPS, genRPS)
			}
		})
	}
	// Nothing a real Envoy sends is bad input: not its first message (a
	// large node spanning gRPC frames), not any flush since.
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "thaw_statsink_bad_input_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			if v := m.GetCounter().GetValue(); v != 0 {
				t.Errorf("thaw_statsink_bad_input_total%v = %v from a real Envoy, want 0", m.GetLabel(), v)
			}
		}
	}
}

// statsinkSlowBackend starts a backend on 127.0.0.1 that answers each request after
// hold and returns its port.
func statsinkSlowBackend(t *testing.T, hold time.Duration) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(hold):
		case <-r.Context().Done():
		}
		fmt.Fprintln(w, "ok")
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().(*net.TCPAddr).Port
}

// statsinkWaitMessages waits (up to 30 s) until Envoy's first stats message arrived.
func statsinkWaitMessages(t *testing.T, reg *prometheus.Registry) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() == "thaw_statsink_messages_total" && mf.GetMetric()[0].GetCounter().GetValue() > 0 {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("no stats message from Envoy within 30 s")
}
