//go:build e2e

package e2e

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/thaw-dev/thaw/e2e/harness"
)

// TestLocalRestart: thaw crashes (SIGKILL) during steady load and is started
// again. Envoy and the backend processes outlive it (own process groups),
// Envoy keeps its configuration and keeps routing warm traffic straight to
// the backends, and the new thaw adopts both and never pushes an empty or
// partial snapshot: no request fails and Envoy's cluster count never drops.
func TestLocalRestart(t *testing.T) {
	cfg := localConfig(t, revisionYAML{
		Name: "restart", Host: "restart.test", StartupDelay: 100 * time.Millisecond, Latency: 50 * time.Millisecond,
		Autoscaling: fast(map[string]string{"target": "5", "target-burst-capacity": "0", "min-scale": "1"}),
	})
	first := harness.StartThaw(t, harness.ThawOptions{Config: cfg})
	load := startLoad(first, "restart.test", "hello from restart", 10)
	waitStatus(t, first, "local/restart", 60*time.Second, "serve mode with ready backends", func(r map[string]any) bool {
		return r["mode"] == "serve" && num(r, "ready") >= 1
	})
	envoy := &envoyAdmin{url: first.EnvoyAdminURL}
	clusters, err := envoy.clusterCount()
	if err != nil || clusters == 0 {
		t.Fatalf("active clusters = %d, %v", clusters, err)
	}
	// Watch Envoy's cluster count through the restart.
	var minClusters atomic.Int64
	minClusters.Store(clusters)
	stopWatch := make(chan struct{})
	var watch sync.WaitGroup
	watch.Add(1)
	go func() {
		defer watch.Done()
		for {
			select {
			case <-stopWatch:
				return
			case <-time.After(50 * time.Millisecond):
			}
			if n, err := envoy.clusterCount(); err == nil && n < minClusters.Load() {
				minClusters.Store(n)
			}
		}
	}()

	okBefore := load.ok.Load()
	first.Kill()
	time.Sleep(2 * time.Second) // warm traffic flows with thaw down
	okWhileDown := load.ok.Load() - okBefore
	second := harness.StartThaw(t, harness.ThawOptions{ConfigPath: first.ConfigPath, StateDir: first.StateDir,
		HTTPPort: first.HTTPPort, GRPCPort: first.GRPCPort, AdminPort: first.AdminPort, EnvoyAdminPort: first.EnvoyAdminPort})
	waitStatus(t, second, "local/restart", 30*time.Second, "serve mode after restart", func(r map[string]any) bool {
		return r["mode"] == "serve" && num(r, "ready") >= 1
	})
	time.Sleep(3 * time.Second)
	close(stopWatch)
	watch.Wait()
	ok, failed, fails := load.stop()
	t.Logf("requests: %d ok (%d while thaw was down), %d failed; min active clusters %d of %d",
		ok, okWhileDown, failed, minClusters.Load(), clusters)
	if okWhileDown == 0 {
		t.Errorf("no request succeeded while thaw was down: warm traffic was interrupted")
	}
	if failed != 0 {
		t.Errorf("%d requests failed across the restart: %v", failed, fails)
	}
	if minClusters.Load() < clusters {
		t.Errorf("Envoy's active clusters dropped from %d to %d: thaw pushed a partial snapshot", clusters, minClusters.Load())
	}
	if want := "adopted running envoy"; !contains(second.Log(), want) {
		t.Errorf("second thaw did not adopt Envoy (log lacks %q)", want)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := second.Status(ctx); err != nil {
		t.Fatal(err)
	}
}
