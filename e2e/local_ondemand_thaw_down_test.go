//go:build e2e

package e2e

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/thaw-dev/thaw/e2e/harness"
	"github.com/thaw-dev/thaw/xds/translate"
)

// TestLocalOnDemandHostsThawDown: `thaw local --on-demand-hosts` with thaw
// killed (docs/scaling.md, "Virtual hosts on demand", thaw unreachable).
// A host already in Envoy keeps serving, also a request silent for longer
// than the fetch timeout (its route's idle timeout replaces the bound). A
// request for a host Envoy does not hold cannot be routed while thaw is
// away: after --on-demand-fetch-timeout Envoy answers it 503 with
// Retry-After (the answer the flag-off failover gives) and counts a
// stream idle timeout. Once thaw is back (adopting Envoy), the host is
// fetched, and the request is held while the revision wakes (longer than
// the fetch timeout) and answered by the woken backend.
func TestLocalOnDemandHostsThawDown(t *testing.T) {
	const fetchTimeout = 2 * time.Second
	cfg := localConfig(t,
		revisionYAML{Name: "warm", Host: "warm.test", Autoscaling: fast(map[string]string{"min-scale": "1"})},
		revisionYAML{Name: "cold", Host: "cold.test", StartupDelay: 2 * fetchTimeout,
			Autoscaling: fast(map[string]string{"initial-scale": "0"})},
	)
	args := append(moduleArgs(t), "--on-demand-hosts", "--on-demand-fetch-timeout="+fetchTimeout.String())
	first := harness.StartThaw(t, harness.ThawOptions{Config: cfg, Args: args})
	waitStatus(t, first, "local/warm", 30*time.Second, "warm ready", func(r map[string]any) bool { return num(r, "ready") >= 1 })
	ctx, cancel := context.WithTimeout(context.Background(), 55*time.Second)
	defer cancel()
	c := client(20 * time.Second)
	warm := func(when, path string, n int) {
		t.Helper()
		for i := range n {
			code, body, _, err := get(ctx, c, first, "warm.test", path)
			if err != nil || code != 200 || !strings.Contains(body, "hello from warm") {
				t.Fatalf("warm request %d %s (%s): code=%d err=%v body=%q", i, when, path, code, err, body)
			}
		}
	}
	warm("before the kill", "/", 5)
	// Silent for longer than the fetch timeout: a routed request keeps its
	// route's idle timeout (none here).
	warm("before the kill", "/?latency="+(fetchTimeout+time.Second).String(), 1)
	first.Kill()
	warm("with thaw down", "/", 5)

	// cold's host is not in Envoy and thaw is down: 503 with Retry-After
	// once the fetch timeout has passed (the client's bound is far longer).
	code, body, h, err := get(ctx, c, first, "cold.test", "/")
	if err != nil || code != 503 || body != translate.OnDemandUnreachableBody {
		t.Fatalf("request for a host Envoy lacks, thaw down: code=%d err=%v body=%q; want 503 %q",
			code, err, body, translate.OnDemandUnreachableBody)
	}
	if ra, err := strconv.Atoi(h.Get("Retry-After")); err != nil || ra < 1 {
		t.Fatalf("503 for a host Envoy lacks, thaw down: Retry-After %q, want whole seconds >= 1", h.Get("Retry-After"))
	}
	envoy := &envoyAdmin{url: first.EnvoyAdminURL}
	stats, err := envoy.get("/stats?filter=" + `^http\.thaw_http\.downstream_rq_idle_timeout$`)
	if err != nil {
		t.Fatalf("Envoy's /stats: %v", err)
	}
	if m := regexp.MustCompile(`downstream_rq_idle_timeout: (\d+)`).FindStringSubmatch(stats); m == nil || m[1] == "0" {
		t.Errorf("Envoy's stream idle timeouts: %q, want the unanswered fetch counted", stats)
	}
	warm("after the 503", "/", 5)

	second := harness.StartThaw(t, harness.ThawOptions{ConfigPath: first.ConfigPath, StateDir: first.StateDir, Args: args,
		HTTPPort: first.HTTPPort, GRPCPort: first.GRPCPort, AdminPort: first.AdminPort, EnvoyAdminPort: first.EnvoyAdminPort})
	code, body, _, err = get(ctx, c, second, "cold.test", "/")
	if err != nil || code != 200 || !strings.Contains(body, "hello from cold") {
		t.Fatalf("request for cold after the restart: code=%d err=%v body=%q; want cold's answer after its wake", code, err, body)
	}
	waitStatus(t, second, "local/warm", 30*time.Second, "warm ready after the restart", func(r map[string]any) bool { return num(r, "ready") >= 1 })
}
