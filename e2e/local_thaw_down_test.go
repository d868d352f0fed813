//go:build e2e

package e2e

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/thaw-dev/thaw/e2e/harness"
	"github.com/thaw-dev/thaw/xds/translate"
)

// TestLocalThawDownFailover: thaw is killed (SIGKILL) while traffic flows
// to a revision whose backends are ready (target burst capacity -1 keeps
// the activator in the path), then restarted; each activator keeps its own
// contract with thaw down.
//   - ext_proc: Envoy fails over from the activator endpoint (priority 0)
//     to the ready backends (priority 1): no request fails while thaw is
//     down, none across its restart. A request for a revision at zero
//     while thaw is down gets 503 with Retry-After and the failover
//     header at once, never a 500.
//   - module: the module keeps the last state it had: warm traffic keeps
//     flowing within container concurrency (no failover is needed), and a
//     request at zero is held for its hold timeout (no thaw to wake the
//     revision), then answered 503 + Retry-After, never a 500.
func TestLocalThawDownFailover(t *testing.T) {
	t.Run("extproc", testThawDownFailoverExtProc)
	t.Run("module", testThawDownModule)
}

func testThawDownFailoverExtProc(t *testing.T) {
	cfg := localConfig(t,
		revisionYAML{Name: "px", Host: "px.test", StartupDelay: 100 * time.Millisecond, Latency: 20 * time.Millisecond,
			Autoscaling: fast(map[string]string{"target-burst-capacity": "-1", "min-scale": "2"})},
		revisionYAML{Name: "cold", Host: "cold.test", StartupDelay: 100 * time.Millisecond, Autoscaling: fast(nil)},
	)
	first := harness.StartThaw(t, harness.ThawOptions{Config: cfg, Args: extprocArgs})
	waitStatus(t, first, "local/px", 60*time.Second, "proxy mode with 2 ready backends", func(r map[string]any) bool {
		return r["mode"] == "proxy" && num(r, "ready") >= 2
	})
	load := startLoad(first, "px.test", "hello from px", 10)
	time.Sleep(time.Second)
	if ok := load.ok.Load(); ok == 0 {
		t.Fatalf("no request succeeded through the activator before the crash: %v", load.fails)
	}

	envoy := &envoyAdmin{url: first.EnvoyAdminURL}
	okBefore := load.ok.Load()
	clusters, err := envoy.get("/clusters")
	if err != nil {
		t.Fatal(err)
	}
	directBefore := backendRequests(clusters, "rev_local_px")
	killed := time.Now()
	first.Kill()
	direct := waitFailoverTraffic(t, envoy, "rev_local_px", directBefore, 15*time.Second)
	t.Logf("requests retried on the backends %v after the kill", direct.Sub(killed).Round(time.Millisecond))
	time.Sleep(2 * time.Second) // proxy-mode traffic flows with thaw down
	okWhileDown := load.ok.Load() - okBefore

	// At zero with thaw down: 503 with Retry-After, never 500.
	c := client(10 * time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	code, body, hdr, err := get(ctx, c, first, "cold.test", "/")
	cancel()
	if err != nil || code != 503 || hdr.Get("Retry-After") == "" {
		t.Errorf("request at zero with thaw down: code=%d err=%v Retry-After=%q body=%q; want 503 with Retry-After",
			code, err, hdr.Get("Retry-After"), body)
	}
	if hdr.Get(translate.FailoverHeader) == "" {
		t.Errorf("503 at zero lacks %s: not the activator-unreachable reply", translate.FailoverHeader)
	}
	// A POST the activator never routed is safe to retry too.
	ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, first.HTTPURL+"/", strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	req.Host = "cold.test"
	resp, err := c.Do(req)
	cancel()
	if err != nil {
		t.Fatalf("POST at zero with thaw down: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" || resp.Header.Get(translate.FailoverHeader) == "" {
		t.Errorf("POST at zero with thaw down: code=%d headers=%v; want 503 with Retry-After and %s",
			resp.StatusCode, resp.Header, translate.FailoverHeader)
	}

	restarted := time.Now()
	second := harness.StartThaw(t, harness.ThawOptions{ConfigPath: first.ConfigPath, StateDir: first.StateDir, Args: extprocArgs,
		HTTPPort: first.HTTPPort, GRPCPort: first.GRPCPort, AdminPort: first.AdminPort, EnvoyAdminPort: first.EnvoyAdminPort})
	waitStatus(t, second, "local/px", 30*time.Second, "proxy mode after restart", func(r map[string]any) bool {
		return r["mode"] == "proxy" && num(r, "ready") >= 2
	})
	// Traffic returns to the activator as soon as it answers: the new thaw
	// counts requests in flight again.
	back := waitActivatorTraffic(t, second, "local/px", 30*time.Second)
	t.Logf("traffic back on the activator %v after the restart began", back.Sub(restarted).Round(time.Millisecond))
	ok, failed, fails := load.stop()
	t.Logf("requests: %d ok (%d while thaw was down), %d failed", ok, okWhileDown, failed)
	if okWhileDown == 0 {
		t.Error("no proxy-mode request succeeded while thaw was down")
	}
	if failed != 0 {
		t.Errorf("%d requests failed across the thaw crash and restart: %v", failed, fails)
	}
}

// waitFailoverTraffic polls Envoy's /clusters until the backends of
// cluster (its endpoints other than the activator, priority 1 in proxy
// mode) have answered requests directly: the route's failover retries. In
// proxy mode with thaw up they answer none (the activator listener reaches
// them through its own cluster). It returns when their count of requests
// went past before.
func waitFailoverTraffic(t *testing.T, e *envoyAdmin, cluster string, before int64, timeout time.Duration) time.Time {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var last string
	for time.Now().Before(deadline) {
		out, err := e.get("/clusters")
		if err == nil {
			last = out
			if backendRequests(out, cluster) > before {
				return time.Now()
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no request of %s reached its backends directly within %s (/clusters: %.2000s)", cluster, timeout, last)
	return time.Time{}
}

// backendRequests sums rq_total of cluster's endpoints other than the
// activator in Envoy's /clusters text.
func backendRequests(clusters, cluster string) int64 {
	var n int64
	for l := range strings.SplitSeq(clusters, "\n") {
		if !strings.HasPrefix(l, cluster+"::") || strings.Contains(l, translate.ActivatorListenerName) {
			continue
		}
		if i := strings.Index(l, "::rq_total::"); i >= 0 {
			v, err := strconv.ParseInt(l[i+len("::rq_total::"):], 10, 64)
			if err == nil {
				n += v
			}
		}
	}
	return n
}

// waitActivatorTraffic waits until th's activator answers requests (its
// thaw_extproc_responses_total grows over 300 ms) and returns when it did.
// The activator's in-flight count is no signal: with container concurrency
// 0 a routed request is not tracked after its answer.
func waitActivatorTraffic(t *testing.T, th *harness.Thaw, rev string, timeout time.Duration) time.Time {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		before := extprocAnswers(t, th)
		time.Sleep(300 * time.Millisecond)
		if extprocAnswers(t, th) > before {
			return time.Now()
		}
	}
	t.Fatalf("revision %s: no request answered by the activator within %s", rev, timeout)
	return time.Time{}
}
