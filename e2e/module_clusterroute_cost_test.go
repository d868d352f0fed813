//go:build e2e

package e2e

import (
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/thaw-dev/thaw/e2e/harness"
	"github.com/thaw-dev/thaw/module/state"
)

// TestModuleClusterRouteEnvoyCPU measures what the module's cluster
// routes (thaw local --activator=module --idle-hold-path) cost Envoy on
// the warm path: closed-loop rounds with 16 requests in flight alternate
// between a plain Envoy routing to a backend, an Envoy whose route goes
// through the module with a fixed cluster, and the same Envoy's route
// with cluster_header x-thaw-cluster, which the module overwrites before
// clearing the route cache (module/activator/clusterroute.go). Every
// cluster-route request carries a client x-thaw-cluster naming a cluster
// that leads to a second backend which answers 418: the test asserts
// that none reaches it, and that every request is answered 200. The
// cluster route removes the header as thaw's do
// (request_headers_to_remove), and both backends answer 500 to a request
// that still carries it: the removal happens after the router picked the
// cluster from the header, and no backend sees it. Envoy
// CPU per request (user + system from /proc) of each side is logged as
// ratios from the same run (docs/scaling.md).
func TestModuleClusterRouteEnvoyCPU(t *testing.T) {
	needModuleSO(t)
	backend, decoy := serveRejectingClusterHeader(t, 200, nil), serveRejectingClusterHeader(t, 418, nil)
	feed := startStateFeed(t)
	feed.send(t, state.Update{Full: true, Revisions: []state.RevisionUpdate{
		{Key: "ns/u", QueueDepth: 1000, HoldTimeoutMs: 10000, Backends: []state.BackendUpdate{{Addr: backend, Slots: 0}}},
		{Key: "ns/h", QueueDepth: 1000, HoldTimeoutMs: 10000, Backends: []state.BackendUpdate{{Addr: backend, Slots: 0}}},
	}})
	headerRoute := headerClusterRoute("/h", "rev_ns_m", "ns/h")
	plainPort, modPort := harness.PickPort(t), harness.PickPort(t)
	plain := harness.StartEnvoy(t, harness.EnvoyOptions{Bootstrap: moduleBootstrap(plainPort,
		[]string{`match: {prefix: "/"}` + "\nroute: {cluster: rev_ns_m, timeout: 30s}"}, nil, staticCluster("rev_ns_m", backend))})
	mod := harness.StartEnvoy(t, harness.EnvoyOptions{Bootstrap: moduleBootstrap(modPort,
		[]string{headerRoute, moduleRoute("/u", "rev_ns_m", "ns/u")},
		[]string{moduleFilter(moduleSO, fmt.Sprintf(`{"stateURL":"%s/state","node":"cost"}`, feed.url))},
		staticCluster("rev_ns_m", backend), staticCluster("rev_ns_decoy", decoy))})

	type side struct {
		name     string
		url      string
		pid      int
		cpu      float64
		reqs     int64
		spoofing bool
	}
	sides := []*side{
		{name: "plain", url: fmt.Sprintf("http://127.0.0.1:%d/p", plainPort), pid: plain.Pid()},
		{name: "module, fixed cluster", url: fmt.Sprintf("http://127.0.0.1:%d/u", modPort), pid: mod.Pid()},
		{name: "module, cluster_header", url: fmt.Sprintf("http://127.0.0.1:%d/h", modPort), pid: mod.Pid(), spoofing: true},
	}
	client := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	var failures atomic.Int64
	var firstFailure atomic.Value
	round := func(s *side, inflight int, d time.Duration) {
		var n atomic.Int64
		deadline := time.Now().Add(d)
		c0 := cpuSeconds(t, s.pid)
		var wg sync.WaitGroup
		for range inflight {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for time.Now().Before(deadline) {
					req, _ := http.NewRequest(http.MethodGet, s.url, nil)
					if s.spoofing {
						req.Header.Set(state.ClusterHeader, "rev_ns_decoy")
					}
					resp, err := client.Do(req)
					if err != nil {
						failures.Add(1)
						firstFailure.CompareAndSwap(nil, err.Error())
						continue
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != 200 {
						failures.Add(1)
						firstFailure.CompareAndSwap(nil, fmt.Sprintf("%s: HTTP %d", s.name, resp.StatusCode))
						continue
					}
					n.Add(1)
				}
			}()
		}
		wg.Wait()
		s.cpu += cpuSeconds(t, s.pid) - c0
		s.reqs += n.Load()
	}
	const inflight = 16
	for _, s := range sides {
		round(s, inflight, 500*time.Millisecond) // warm up connections
		s.cpu, s.reqs = 0, 0
	}
	for r := range 4 {
		for i := range sides {
			round(sides[(i+r)%len(sides)], inflight, 2*time.Second)
		}
	}
	if f := failures.Load(); f > 0 {
		t.Fatalf("%d requests failed (first: %v)", f, firstFailure.Load())
	}
	per := make([]float64, len(sides))
	for i, s := range sides {
		if s.reqs == 0 {
			t.Fatalf("%s: no request completed", s.name)
		}
		per[i] = s.cpu / float64(s.reqs) * 1e6
	}
	t.Logf("%d in flight: Envoy CPU per request plain %.1f µs; %s %.1f µs (%.2fx plain); %s %.1f µs (%.2fx plain, %.2fx fixed cluster)",
		inflight, per[0], sides[1].name, per[1], per[1]/per[0], sides[2].name, per[2], per[2]/per[0], per[2]/per[1])
}
