//go:build e2e

package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/thaw-dev/thaw/e2e/harness"
)

// TestLocalOnDemandHostsThawDown: `thaw local --on-demand-hosts` with thaw
// killed (docs/scaling.md, "Virtual hosts on demand", the thaw-down
// decision). A host already in Envoy keeps serving. A request for a host
// Envoy does not hold cannot be routed while thaw is away: Envoy's
// on_demand filter keeps it paused; once thaw is back (adopting Envoy),
// Envoy reconnects, asks again, and the request is routed, held, and
// answered by the woken backend.
func TestLocalOnDemandHostsThawDown(t *testing.T) {
	cfg := localConfig(t,
		revisionYAML{Name: "warm", Host: "warm.test", Autoscaling: fast(map[string]string{"min-scale": "1"})},
		revisionYAML{Name: "cold", Host: "cold.test", Autoscaling: fast(map[string]string{"initial-scale": "0"})},
	)
	args := append(moduleArgs(t), "--on-demand-hosts")
	first := harness.StartThaw(t, harness.ThawOptions{Config: cfg, Args: args})
	waitStatus(t, first, "local/warm", 30*time.Second, "warm ready", func(r map[string]any) bool { return num(r, "ready") >= 1 })
	ctx, cancel := context.WithTimeout(context.Background(), 55*time.Second)
	defer cancel()
	c := client(10 * time.Second)
	warm := func(when string) {
		t.Helper()
		for i := range 5 {
			code, body, _, err := get(ctx, c, first, "warm.test", "/")
			if err != nil || code != 200 || !strings.Contains(body, "hello from warm") {
				t.Fatalf("warm request %d %s: code=%d err=%v body=%q", i, when, code, err, body)
			}
		}
	}
	warm("before the kill")
	first.Kill()
	warm("with thaw down")

	// cold's host is not in Envoy: its request waits for thaw.
	type answer struct {
		code int
		body string
		err  error
	}
	done := make(chan answer, 1)
	go func() {
		code, body, _, err := get(ctx, client(45*time.Second), first, "cold.test", "/")
		done <- answer{code, body, err}
	}()
	select {
	case a := <-done:
		t.Fatalf("request for a host Envoy lacks answered with thaw down: code=%d err=%v body=%q; want it to wait for thaw",
			a.code, a.err, a.body)
	case <-time.After(2 * time.Second):
	}
	second := harness.StartThaw(t, harness.ThawOptions{ConfigPath: first.ConfigPath, StateDir: first.StateDir, Args: args,
		HTTPPort: first.HTTPPort, GRPCPort: first.GRPCPort, AdminPort: first.AdminPort, EnvoyAdminPort: first.EnvoyAdminPort})
	a := <-done
	if a.err != nil || a.code != 200 || !strings.Contains(a.body, "hello from cold") {
		t.Fatalf("request paused while thaw was down, after the restart: code=%d err=%v body=%q; want cold's answer", a.code, a.err, a.body)
	}
	waitStatus(t, second, "local/warm", 30*time.Second, "warm ready after the restart", func(r map[string]any) bool { return num(r, "ready") >= 1 })
}
