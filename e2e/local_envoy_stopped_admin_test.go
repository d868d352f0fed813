//go:build e2e

package e2e

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/thaw-dev/thaw/e2e/harness"
)

// TestLocalAdminWhileEnvoyStopped (issue 31): thaw's own admin endpoints
// (/metrics, /status, /healthz, /readyz and `thaw status`) answer while
// its Envoy is stopped (SIGSTOP), before and after thaw closed the stopped
// Envoy's xDS stream as stalled (--xds-ack-timeout=1s, a config edit
// pending). /metrics is read with the harness's 2 s admin client (as the
// other tests read it) and still carries Envoy's refusal counters, the
// last values read, with the failed reads counted.
func TestLocalAdminWhileEnvoyStopped(t *testing.T) {
	warm := revisionYAML{Name: "warm", Host: "warm.test", Autoscaling: fast(map[string]string{"min-scale": "1"})}
	added := revisionYAML{Name: "added", Host: "added.test", Autoscaling: fast(map[string]string{"initial-scale": "0"})}
	path := filepath.Join(t.TempDir(), "thaw.yaml")
	write := func(doc string) { writeConfig(t, path, doc) }
	write(localConfig(t, warm))
	th := harness.StartThaw(t, harness.ThawOptions{ConfigPath: path,
		Args: append(moduleArgs(t), "--idle-hold-path", "--xds-ack-timeout=1s", "--reload-interval=200ms")})
	waitStatus(t, th, "local/warm", 20*time.Second, "warm ready", func(r map[string]any) bool { return num(r, "ready") >= 1 })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// One refusal Envoy answers itself (no route for the host), read once
	// into thaw's /metrics while Envoy runs.
	if code, _, _, err := get(ctx, client(5*time.Second), th, "unknown.test", "/"); err != nil || code != 404 {
		t.Fatalf("unknown host: code=%d err=%v, want 404", code, err)
	}
	const refused = `thaw_envoy_http_refusals_total{counter="downstream_rq_4xx"} 1`
	waitUntil(t, "the 404 on thaw's /metrics", 10*time.Second, func() bool { return strings.Contains(metricsText(t, th), refused) })

	pid := envoyPid(t, th)
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatalf("SIGSTOP envoy: %v", err)
	}
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGCONT) })
	check := func(when string) {
		t.Helper()
		for i := range 3 { // the first scrape after the stop may wait on Envoy, the next ones do not
			start := time.Now()
			body := metricsText(t, th) // fails the test past the client's 2 s
			if !strings.Contains(body, refused) {
				t.Fatalf("%s, scrape %d: /metrics lacks %q; refusal lines:\n%s", when, i, refused, grepLines(body, "thaw_envoy_http_refusals"))
			}
			t.Logf("%s: /metrics answered in %v", when, time.Since(start).Round(time.Millisecond))
		}
		for _, p := range []string{"/status", "/healthz", "/readyz"} {
			if code, _, _, err := getURL(ctx, th.AdminURL+p); err != nil || code != 200 {
				t.Fatalf("%s: %s: code=%d err=%v", when, p, code, err)
			}
		}
		out, err := exec.CommandContext(ctx, harness.ThawBinary(t), "status", "--admin-address", strings.TrimPrefix(th.AdminURL, "http://")).CombinedOutput()
		if err != nil || !strings.Contains(string(out), "local/warm") {
			t.Fatalf("%s: thaw status: %v\n%s", when, err, out)
		}
	}
	check("Envoy stopped")
	// The read the first scrape started fails at its 2 s timeout; scrapes
	// then do not wait on Envoy at all.
	waitUntil(t, "a failed read of the stopped Envoy's admin counted", 10*time.Second, func() bool {
		return metricValue(t, th, "thaw_envoy_http_refusals_read_failures_total") >= 1
	})
	check("a read failed")
	// A config edit leaves an xDS response pending to the stopped Envoy
	// until thaw closes its stream as stalled.
	write(localConfig(t, warm, added))
	waitUntil(t, "thaw closes the stopped Envoy's xDS stream", 15*time.Second, func() bool {
		return strings.Contains(th.Log(), "closing stalled xDS stream")
	})
	check("xDS stream closed as stalled")
}
