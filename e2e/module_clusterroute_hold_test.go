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

// TestModuleClusterRouteHeldResume: on a cluster route (cluster_header
// x-thaw-cluster, which the module overwrites), requests held for a slot
// of a warm revision (container concurrency 4, 32 clients) and resumed
// when one frees keep the route Envoy resolved at their request headers
// (the module does not resolve it again on resume): every request is
// answered 200 by the revision's backend, none reaches the cluster a
// client named in its own x-thaw-cluster (a decoy answering 418), and
// the backend never has more than 4 in flight. Bounded: 32 clients × 15
// requests.
func TestModuleClusterRouteHeldResume(t *testing.T) {
	needModuleSO(t)
	var inFlight, peak atomic.Int32
	busy := func() {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for m := peak.Load(); n > m && !peak.CompareAndSwap(m, n); m = peak.Load() {
		}
		time.Sleep(2 * time.Millisecond) // keep the slots busy so requests are held
	}
	backend, decoy := serveRejectingClusterHeader(t, http.StatusOK, busy), serveRejectingClusterHeader(t, http.StatusTeapot, nil)
	feed := startStateFeed(t)
	feed.send(t, state.Update{Full: true, Revisions: []state.RevisionUpdate{
		{Key: "ns/h", QueueDepth: 1000, HoldTimeoutMs: 20000, Backends: []state.BackendUpdate{{Addr: backend, Slots: 4}}},
	}})
	route := headerClusterRoute("/", "rev_ns_m", "ns/h")
	port := harness.PickPort(t)
	harness.StartEnvoy(t, harness.EnvoyOptions{Bootstrap: moduleBootstrap(port, []string{route},
		[]string{moduleFilter(moduleSO, fmt.Sprintf(`{"stateURL":"%s/state","node":"hold"}`, feed.url))},
		staticCluster("rev_ns_m", backend), staticCluster("rev_ns_decoy", decoy))})
	url := fmt.Sprintf("http://127.0.0.1:%d/", port)
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	// The module takes its state from the feed: wait (bounded) until a
	// request is answered by the backend.
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := client.Get(url)
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("revision not served within 10 s (last: %v)", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	var mu sync.Mutex
	codes := map[int]int{}
	var wg sync.WaitGroup
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 15 {
				req, _ := http.NewRequest(http.MethodGet, url, nil)
				req.Header.Set(state.ClusterHeader, "rev_ns_decoy")
				code := 0
				if resp, err := client.Do(req); err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					code = resp.StatusCode
				}
				mu.Lock()
				codes[code]++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if codes[http.StatusOK] != 32*15 {
		t.Fatalf("answers by status (0: transport error): %v, want all %d 200 from the revision's backend", codes, 32*15)
	}
	if p := peak.Load(); p > 4 || p < 4 {
		t.Fatalf("backend peak in flight %d, want 4 (the slots, all busy: requests were held)", p)
	}
}
