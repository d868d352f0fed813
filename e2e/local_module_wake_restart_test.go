//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/thaw-dev/thaw/e2e/harness"
)

// TestLocalModuleWakeAfterXDSRestart (issues 28 and 31): with the module
// and --idle-hold-path, thaw closes Envoy's xDS stream as stalled (Envoy
// is stopped, SIGSTOP, while a response to it is pending: a config edit
// adds a revision) and Envoy reconnects once it runs again (SIGCONT).
// Afterwards a revision at zero, and the one added while Envoy was
// stopped, must still wake: the request is answered by the backend, not
// held to its hold timeout.
func TestLocalModuleWakeAfterXDSRestart(t *testing.T) {
	atZero := fast(map[string]string{"initial-scale": "0"})
	cold := revisionYAML{Name: "cold", Host: "cold.test", Autoscaling: atZero}
	during := revisionYAML{Name: "during", Host: "during.test", Autoscaling: atZero}
	warm := revisionYAML{Name: "warm", Host: "warm.test", Autoscaling: fast(map[string]string{"min-scale": "1"})}
	added := revisionYAML{Name: "added", Host: "added.test", Autoscaling: atZero}
	path := filepath.Join(t.TempDir(), "thaw.yaml")
	write := func(doc string) { writeConfig(t, path, doc) }
	write(localConfig(t, cold, during, warm))
	th := harness.StartThaw(t, harness.ThawOptions{ConfigPath: path,
		Args: append(moduleArgs(t), "--idle-hold-path", "--xds-ack-timeout=1s", "--reload-interval=200ms")})
	waitStatus(t, th, "local/warm", 20*time.Second, "warm ready", func(r map[string]any) bool { return num(r, "ready") >= 1 })
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	c := client(20 * time.Second)
	if code, _, _, err := get(ctx, c, th, "warm.test", "/"); err != nil || code != 200 {
		t.Fatalf("warm before the restart: code=%d err=%v", code, err)
	}

	pid := envoyPid(t, th)
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatalf("SIGSTOP envoy: %v", err)
	}
	stopped := true
	resume := func() {
		if stopped {
			stopped = false
			_ = syscall.Kill(pid, syscall.SIGCONT)
		}
	}
	t.Cleanup(resume)
	write(localConfig(t, cold, during, warm, added))
	// A request for a revision at zero reaches the stopped Envoy: the
	// module holds it once Envoy runs again, while the stream restarts.
	type result struct {
		code int
		body string
		err  error
	}
	inFlight := make(chan result, 1)
	go func() {
		code, body, _, err := get(ctx, c, th, during.Host, "/")
		inFlight <- result{code, body, err}
	}()
	waitUntil(t, "thaw closes the stopped Envoy's xDS stream", 15*time.Second, func() bool {
		return strings.Contains(th.Log(), "closing stalled xDS stream")
	})
	resume()
	// Envoy's reconnected stream ACKs again before the wakes are asked.
	waitUntil(t, "Envoy back on a new xDS stream", 15*time.Second, func() bool {
		return metricValue(t, th, `thaw_xds_streams_closed_total{reason="ack_timeout"}`) >= 1 &&
			strings.Count(th.Log(), `"xDS stream opened"`) >= 2
	})

	select {
	case r := <-inFlight:
		if r.err != nil || r.code != 200 || !strings.Contains(r.body, "hello from during") {
			t.Fatalf("wake sent while Envoy was stopped: code=%d err=%v body=%q", r.code, r.err, r.body)
		}
	case <-ctx.Done():
		t.Fatal("the wake sent while Envoy was stopped never ended")
	}
	envoy := &envoyAdmin{url: th.EnvoyAdminURL}
	for _, r := range []revisionYAML{cold, added} {
		// At zero on the hold path: Envoy holds no cluster for it, the wake
		// brings one over the new stream.
		out, err := envoy.get("/clusters")
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(out, "rev_local_"+r.Name+"::") {
			t.Fatalf("Envoy has a cluster for %s at zero", r.Name)
		}
		start := time.Now()
		code, body, _, err := get(ctx, c, th, r.Host, "/")
		if err != nil || code != 200 || !strings.Contains(body, "hello from "+r.Name) {
			t.Fatalf("wake of %s after the xDS stream restart: code=%d err=%v body=%q after %v", r.Name, code, err, body, time.Since(start))
		}
		t.Logf("%s woke in %v after the restart", r.Name, time.Since(start).Round(time.Millisecond))
	}
}

// envoyPid returns the pid of th's Envoy (its state dir's envoy.pid,
// checked against the process's command line).
func envoyPid(t *testing.T, th *harness.Thaw) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(th.StateDir, "envoy.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		t.Fatalf("envoy.pid %q: %v", b, err)
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || !strings.Contains(string(cmdline), th.StateDir) {
		t.Fatalf("pid %d is not this test's Envoy (%v)", pid, err)
	}
	return pid
}

// metricValue returns the value of the metrics line starting with name
// (with its labels), 0 when absent.
func metricValue(t *testing.T, th *harness.Thaw, name string) float64 {
	t.Helper()
	for _, l := range strings.Split(metricsText(t, th), "\n") {
		if v, ok := strings.CutPrefix(l, name+" "); ok {
			f, _ := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return f
		}
	}
	return 0
}
