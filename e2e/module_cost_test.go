//go:build e2e

package e2e

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/thaw-dev/thaw/e2e/harness"
	"github.com/thaw-dev/thaw/module/state"
)

// TestModulePathEnvoyCPU measures what the activator module costs Envoy:
// closed-loop rounds (16 and 4 requests in flight) alternate between a
// plain Envoy routing to a backend and an Envoy whose route goes through
// the module with container concurrency 4 (and, at 16, 0: no hold) on the
// same backend, and the
// Envoy CPU per request (user + system from /proc) and throughput of each
// side are logged as ratios from the same run. At 16 in flight through
// cc 4 a third side takes part: a plain Envoy whose cluster limits itself
// to 4 upstream connections and queues the rest in its connection pool
// (circuit breakers, no module), the cost of limiting concurrency to 4
// inside Envoy at all, so the module's own share of the ratio shows. It
// asserts only what must hold (every request answered 200, the backend
// never above 4 in flight from the module side); the figures go to
// docs/activator.md.
//
// THAW_E2E_MODULE_BASELINE_SO=path adds a fourth side to every run: an
// Envoy loading another build of the module (for example main's, built
// with `go build -buildmode=c-shared -o /some/dir/base.so
// ./module/activator` in a checkout of it), so a change to the module is
// measured against its baseline in the same run.
func TestModulePathEnvoyCPU(t *testing.T) {
	needModuleSO(t)
	// One backend serving both Envoys; in-flight tracked per Envoy side
	// by path prefix.
	var inFlight, maxMod atomic.Int32
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/m" {
			n := inFlight.Add(1)
			defer inFlight.Add(-1)
			for {
				m := maxMod.Load()
				if n <= m || maxMod.CompareAndSwap(m, n) {
					break
				}
			}
		}
		io.WriteString(w, "ok")
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	backend := ln.Addr().String()
	feed := startStateFeed(t)
	feed.send(t, state.Update{Full: true, Revisions: []state.RevisionUpdate{
		{Key: "ns/m", QueueDepth: 1000, HoldTimeoutMs: 10000, Backends: []state.BackendUpdate{{Addr: backend, Slots: 4}}},
		{Key: "ns/u", QueueDepth: 1000, HoldTimeoutMs: 10000, Backends: []state.BackendUpdate{{Addr: backend, Slots: 0}}},
	}})

	plainPort, modPort := harness.PickPort(t), harness.PickPort(t)
	plain := harness.StartEnvoy(t, harness.EnvoyOptions{Bootstrap: moduleBootstrap(plainPort,
		[]string{`match: {prefix: "/"}` + "\nroute: {cluster: rev_ns_m, timeout: 30s}"}, nil, staticCluster("rev_ns_m", backend))})
	mod := harness.StartEnvoy(t, harness.EnvoyOptions{Bootstrap: moduleBootstrap(modPort,
		[]string{moduleRoute("/u", "rev_ns_m", "ns/u"), moduleRoute("/", "rev_ns_m", "ns/m")},
		[]string{moduleFilter(moduleSO, fmt.Sprintf(`{"stateURL":"%s/state","node":"cost"}`, feed.url))},
		staticCluster("rev_ns_m", backend))})

	// Envoy's own concurrency limit: 4 HTTP/1.1 upstream connections,
	// the other requests pending in the connection pool.
	nativePort := harness.PickPort(t)
	native := harness.StartEnvoy(t, harness.EnvoyOptions{Name: "native", Bootstrap: moduleBootstrap(nativePort,
		[]string{`match: {prefix: "/"}` + "\nroute: {cluster: rev_ns_m, timeout: 30s}"}, nil,
		staticCluster("rev_ns_m", backend)+"\ncircuit_breakers: {thresholds: [{max_connections: 4, max_pending_requests: 1000, max_requests: 1000}]}")})

	type side struct {
		name string
		url  string
		pid  int
		cpu  float64
		reqs int64
		secs float64
	}
	sides := []*side{
		{name: "plain", url: fmt.Sprintf("http://127.0.0.1:%d/p", plainPort), pid: plain.Pid()},
		{name: "module", url: fmt.Sprintf("http://127.0.0.1:%d/m", modPort), pid: mod.Pid()},
		{name: "envoy-limit-4", url: fmt.Sprintf("http://127.0.0.1:%d/p", nativePort), pid: native.Pid()},
	}
	var baseline *side
	if so := os.Getenv("THAW_E2E_MODULE_BASELINE_SO"); so != "" {
		cur := moduleSO
		moduleSO = so // moduleRoute names the module too
		basePort := harness.PickPort(t)
		b := harness.StartEnvoy(t, harness.EnvoyOptions{Name: "baseline", Bootstrap: moduleBootstrap(basePort,
			[]string{moduleRoute("/u", "rev_ns_m", "ns/u"), moduleRoute("/", "rev_ns_m", "ns/m")},
			[]string{moduleFilter(so, fmt.Sprintf(`{"stateURL":"%s/state","node":"baseline"}`, feed.url))},
			staticCluster("rev_ns_m", backend))})
		moduleSO = cur
		// Path /b: its own revision state in its own Envoy, not counted
		// in the module side's in-flight maximum.
		baseline = &side{name: "baseline", url: fmt.Sprintf("http://127.0.0.1:%d/b", basePort), pid: b.Pid()}
	}
	client := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	var failures atomic.Int64
	round := func(s *side, inflight int, d time.Duration) {
		var n atomic.Int64
		deadline := time.Now().Add(d)
		c0 := cpuSeconds(t, s.pid)
		start := time.Now()
		var wg sync.WaitGroup
		for i := 0; i < inflight; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for time.Now().Before(deadline) {
					resp, err := client.Get(s.url)
					if err != nil {
						failures.Add(1)
						continue
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != 200 {
						failures.Add(1)
						continue
					}
					n.Add(1)
				}
			}()
		}
		wg.Wait()
		s.secs += time.Since(start).Seconds()
		s.cpu += cpuSeconds(t, s.pid) - c0
		s.reqs += n.Load()
	}
	unlimited := fmt.Sprintf("http://127.0.0.1:%d/u", modPort)
	for _, run := range []struct {
		inflight int
		modURL   string
		what     string
	}{{16, sides[1].url, "module (cc 4)"}, {4, sides[1].url, "module (cc 4)"}, {16, unlimited, "module (cc 0)"}} {
		inflight := run.inflight
		sides[1].url = run.modURL
		in := sides[:2]
		if run.inflight == 16 && run.modURL != unlimited {
			in = sides
		}
		if baseline != nil {
			baseline.url = baseline.url[:strings.LastIndex(baseline.url, "/")] + "/b"
			if run.modURL == unlimited {
				baseline.url = baseline.url[:strings.LastIndex(baseline.url, "/")] + "/u"
			}
			in = append(in[:len(in):len(in)], baseline)
		}
		for _, s := range in {
			s.cpu, s.reqs, s.secs = 0, 0, 0
			round(s, inflight, 500*time.Millisecond) // warm up connections
			s.cpu, s.reqs, s.secs = 0, 0, 0
		}
		for r := 0; r < 4; r++ {
			for i := range in {
				round(in[(i+r)%len(in)], inflight, 2*time.Second)
			}
		}
		p, m := sides[0], sides[1]
		if p.reqs == 0 || m.reqs == 0 {
			t.Fatalf("no requests completed (plain %d, module %d)", p.reqs, m.reqs)
		}
		pc, mc := p.cpu/float64(p.reqs)*1e6, m.cpu/float64(m.reqs)*1e6
		pt, mt := float64(p.reqs)/p.secs, float64(m.reqs)/m.secs
		t.Logf("%d in flight: Envoy CPU per request plain %.1f µs, %s %.1f µs: %.2fx; throughput plain %.0f req/s, module %.0f req/s: %.2fx",
			inflight, pc, run.what, mc, mc/pc, pt, mt, mt/pt)
		if baseline != nil && baseline.reqs > 0 {
			bc := baseline.cpu / float64(baseline.reqs) * 1e6
			t.Logf("%d in flight: baseline module build %.1f µs: %.2fx plain; this build %.2fx of it", inflight, bc, bc/pc, mc/bc)
		}
		if len(in) >= 3 && in[2] == sides[2] && in[2].reqs > 0 {
			n := in[2]
			nc := n.cpu / float64(n.reqs) * 1e6
			t.Logf("%d in flight: Envoy's own limit of 4 (connection pool queue, no module) %.1f µs: %.2fx plain; module %.2fx of it",
				inflight, nc, nc/pc, mc/nc)
		}
	}
	if f := failures.Load(); f > 0 {
		t.Fatalf("%d requests failed", f)
	}
	if m := maxMod.Load(); m > 4 || m == 0 {
		t.Fatalf("backend saw %d requests in flight from the module side, want 1..4 (cc 4)", m)
	}
}
