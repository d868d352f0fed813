//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/thaw-dev/thaw/e2e/harness"
)

// TestLocalModuleThawKilledWithRequestsHeld: with the activator module,
// held requests live in Envoy, not in thaw. thaw is killed (SIGKILL) while
// 1,000 requests to a revision at zero are held and warm traffic flows
// through the module (container concurrency 4, target burst capacity -1):
//   - warm traffic keeps flowing while thaw is down (the module keeps the
//     last state it had: no failover is needed) and across the restart;
//   - a request at zero to a revision with a 2 s hold timeout gets 503 +
//     Retry-After after its hold timeout (no thaw to wake it), never a 500;
//   - the 1,000 held requests survive the crash and are all served once a
//     restarted thaw (adopting Envoy and the processes) brings a backend,
//     within their hold timeout.
//
// The ext_proc path differs (TestLocalThawDownFailover): its held requests
// are in thaw and fail with it; Envoy fails over to the ready backends.
func TestLocalModuleThawKilledWithRequestsHeld(t *testing.T) {
	const held = 1000
	cfg := localConfig(t,
		revisionYAML{Name: "warm", Host: "warm.test", StartupDelay: 100 * time.Millisecond, Latency: 20 * time.Millisecond,
			Autoscaling: fast(map[string]string{"target-burst-capacity": "-1", "min-scale": "2", "container-concurrency": "4"})},
		revisionYAML{Name: "cold", Host: "cold.test", StartupDelay: 4 * time.Second, Latency: 20 * time.Millisecond,
			Autoscaling: fast(map[string]string{"hold-timeout": "45s", "max-scale": "1"})},
		revisionYAML{Name: "idle", Host: "idle.test", StartupDelay: 100 * time.Millisecond,
			Autoscaling: fast(map[string]string{"hold-timeout": "2s"})},
	)
	args := append([]string{"--envoy-open-files", "8192"}, moduleArgs(t)...)
	first := harness.StartThaw(t, harness.ThawOptions{Config: cfg, Args: args})
	waitStatus(t, first, "local/warm", 60*time.Second, "2 ready backends", func(r map[string]any) bool {
		return num(r, "ready") >= 2
	})
	load := startLoad(first, "warm.test", "hello from warm", 10)
	time.Sleep(time.Second)
	if load.ok.Load() == 0 {
		t.Fatalf("no warm request succeeded through the module before the crash: %v", load.fails)
	}

	// 1,000 requests at zero, held in Envoy's module; thaw killed once
	// they all are (its backend takes 4 s to start).
	burst := make(chan []burstOutcome, 1)
	go func() { burst <- burstAll(first, "cold.test", held, 60*time.Second) }()
	deadline := time.Now().Add(20 * time.Second)
	for envoyStat(t, first, "http.thaw_http.downstream_rq_active") < held {
		if time.Now().After(deadline) {
			t.Fatalf("the burst never had %d requests active in Envoy", held)
		}
		time.Sleep(20 * time.Millisecond)
	}
	okBefore := load.ok.Load()
	killed := time.Now()
	first.Kill()
	time.Sleep(2 * time.Second) // warm traffic with thaw down
	okWhileDown := load.ok.Load() - okBefore

	c := client(10 * time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	start := time.Now()
	code, body, hdr, err := get(ctx, c, first, "idle.test", "/")
	took := time.Since(start)
	cancel()
	if err != nil || code != 503 || hdr.Get("Retry-After") == "" || !strings.Contains(body, "did not become ready in time") {
		t.Errorf("request at zero with thaw down: code=%d err=%v Retry-After=%q body=%q; want the hold-timeout 503 with Retry-After",
			code, err, hdr.Get("Retry-After"), body)
	}
	t.Logf("request at zero with thaw down answered in %v (hold timeout 2 s)", took.Round(time.Millisecond))
	if err != nil {
		logb, _ := os.ReadFile(filepath.Join(first.StateDir, "envoy.log"))
		t.Fatalf("Envoy unreachable with thaw down; envoy.log ends:\n%s", logb[max(0, len(logb)-6000):])
	}

	second := harness.StartThaw(t, harness.ThawOptions{ConfigPath: first.ConfigPath, StateDir: first.StateDir, Args: args,
		HTTPPort: first.HTTPPort, GRPCPort: first.GRPCPort, AdminPort: first.AdminPort, EnvoyAdminPort: first.EnvoyAdminPort})
	var res []burstOutcome
	select {
	case res = <-burst:
	case <-time.After(60 * time.Second):
		t.Fatal("the held burst was not answered within 60 s of the crash")
	}
	served := time.Since(killed)
	ok := 0
	var fails []string
	for _, r := range res {
		if r.err == nil && r.code == 200 && strings.Contains(r.body, "hello from cold") {
			ok++
		} else if len(fails) < 10 {
			fails = append(fails, fmt.Sprintf("code=%d err=%v body=%.80q", r.code, r.err, r.body))
		}
	}
	t.Logf("held across the crash: %d/%d served, the last %v after the kill (%s)", ok, held, served.Round(time.Millisecond), tookQuantiles(res))
	if ok != held {
		t.Errorf("%d of %d requests held when thaw was killed failed: %v", held-ok, held, fails)
	}
	waitStatus(t, second, "local/warm", 30*time.Second, "2 ready backends after the restart", func(r map[string]any) bool {
		return num(r, "ready") >= 2
	})
	time.Sleep(time.Second)
	okAll, failed, loadFails := load.stop()
	t.Logf("warm requests: %d ok (%d in the 2 s thaw was down), %d failed", okAll, okWhileDown, failed)
	if okWhileDown == 0 {
		t.Error("no warm request succeeded while thaw was down")
	}
	if failed != 0 {
		t.Errorf("%d warm requests failed across the crash and restart: %v", failed, loadFails)
	}
}
