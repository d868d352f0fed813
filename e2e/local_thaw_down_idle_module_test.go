//go:build e2e

package e2e

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/thaw-dev/thaw/e2e/harness"
)

// TestLocalModuleIdleThawDown: `thaw local --activator=module` (the idle
// hold path is its default) with thaw killed (issue 28's "the failover when thaw
// is unreachable"). Envoy keeps its last configuration and the module its
// last state: the warm revision keeps serving (and its backend still never
// sees x-thaw-cluster); the revision at zero, which has no cluster in
// Envoy, is held for its hold timeout (2 s here) and answered 503 with
// Retry-After; Envoy gets no cluster for it meanwhile. A restarted thaw
// adopts Envoy and the warm backend, and the idle revision then wakes on
// a request and is answered by its backend.
func TestLocalModuleIdleThawDown(t *testing.T) {
	const holdTimeout = 2 * time.Second
	cfg := localConfig(t,
		revisionYAML{Name: "warm", Host: "warm.test", Autoscaling: fast(map[string]string{"min-scale": "1"})},
		revisionYAML{Name: "cold", Host: "cold.test", StartupDelay: 100 * time.Millisecond,
			Autoscaling: fast(map[string]string{"initial-scale": "0", "hold-timeout": holdTimeout.String()})},
	)
	args := moduleArgs(t) // the idle hold path by default
	first := harness.StartThaw(t, harness.ThawOptions{Config: cfg, Args: args})
	envoy := &envoyAdmin{url: first.EnvoyAdminURL}
	hasCluster := func(name string) bool {
		t.Helper()
		out, err := envoy.get("/clusters")
		if err != nil {
			t.Fatalf("Envoy's /clusters: %v", err)
		}
		return strings.Contains(out, name+"::")
	}
	waitStatus(t, first, "local/warm", 30*time.Second, "warm ready", func(r map[string]any) bool { return num(r, "ready") >= 1 })
	waitUntil(t, "warm's cluster in Envoy", 10*time.Second, func() bool { return hasCluster("rev_local_warm") })
	if hasCluster("rev_local_cold") {
		t.Fatal("Envoy has a cluster for the revision at zero")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := client(10 * time.Second)
	warm := func(when string, n int) {
		t.Helper()
		for i := range n {
			code, body, err := getWithHeader(ctx, c, first, "warm.test", "x-thaw-cluster", "rev_local_cold")
			if err != nil || code != 200 || !strings.Contains(body, "hello from warm") {
				t.Fatalf("warm request %d %s: code=%d err=%v body=%q", i, when, code, err, body)
			}
		}
	}
	warm("before the kill", 5)

	first.Kill()
	warm("with thaw down", 20)

	// At zero with thaw down: held for the hold timeout, then the
	// hold-timeout 503 with Retry-After.
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, first.HTTPURL+"/", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = "cold.test"
	start := time.Now()
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("request at zero with thaw down: %v (is Envoy still up?)", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" || !strings.Contains(string(b), "did not become ready in time") {
		t.Errorf("request at zero with thaw down: code=%d Retry-After=%q body=%q; want the hold-timeout 503 with Retry-After",
			resp.StatusCode, resp.Header.Get("Retry-After"), b)
	}
	t.Logf("request at zero with thaw down answered %d in %v (hold timeout %v)", resp.StatusCode, time.Since(start).Round(time.Millisecond), holdTimeout)
	if hasCluster("rev_local_cold") {
		t.Error("Envoy got a cluster for the revision at zero while thaw was down")
	}
	warm("with thaw down, after the held request", 5)

	// A restarted thaw adopts Envoy and the warm backend; the idle
	// revision then wakes. The first request after the restart may still
	// time out while the backend starts (2 s hold): bounded retries.
	second := harness.StartThaw(t, harness.ThawOptions{ConfigPath: first.ConfigPath, StateDir: first.StateDir, Args: args,
		HTTPPort: first.HTTPPort, GRPCPort: first.GRPCPort, AdminPort: first.AdminPort, EnvoyAdminPort: first.EnvoyAdminPort})
	waitStatus(t, second, "local/warm", 30*time.Second, "warm ready after the restart", func(r map[string]any) bool { return num(r, "ready") >= 1 })
	var last string
	woke := false
	for i := 0; i < 5 && !woke; i++ {
		code, body, err := getWithHeader(ctx, c, second, "cold.test", "x-thaw-cluster", "rev_local_warm")
		woke = err == nil && code == 200 && strings.Contains(body, "hello from cold")
		last = body
		if err != nil {
			last = err.Error()
		}
		t.Logf("request %d to the idle revision after the restart: code=%d", i, code)
	}
	if !woke {
		t.Fatalf("the idle revision did not wake after thaw restarted; last answer %q", last)
	}
	if !hasCluster("rev_local_cold") {
		t.Error("the woken revision has no cluster in Envoy")
	}
	warm("after the restart", 5)
}
