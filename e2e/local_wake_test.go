//go:build e2e

package e2e

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/thaw-dev/thaw/e2e/harness"
)

// wakeRevision renders one revision of the local file with a wake policy
// block (YAML, indented under the revision).
func wakeRevision(t testing.TB, r revisionYAML, wakeYAML string) string {
	t.Helper()
	entry := strings.TrimPrefix(localConfig(t, r), "revisions:\n")
	if wakeYAML == "" {
		return entry
	}
	return entry + "    wake:\n" + indent(wakeYAML, "      ")
}

func indent(s, prefix string) string {
	var b strings.Builder
	for _, line := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		b.WriteString(prefix + line + "\n")
	}
	return b.String()
}

// send sends method path with Host host and extra headers through thaw's
// Envoy.
func send(ctx context.Context, c *http.Client, th *harness.Thaw, method, host, path string, hdr map[string]string) (int, string, http.Header, error) {
	req, err := http.NewRequestWithContext(ctx, method, th.HTTPURL+path, nil)
	if err != nil {
		return 0, "", nil, err
	}
	req.Host = host
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header, err
}

const browserAccept = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"

// TestLocalWakePolicy: with real Envoy and thaw local, a revision at zero
//   - answers a kube-probe/1.37 request with the rule's static response and
//     stays at zero (10 s), and answers a bot with 503 + Retry-After;
//   - answers a browser navigation at once with the waiting page, and the
//     revision wakes; the page's retry then reaches the application;
//   - holds a curl request until the application answers, with the
//     cold-start header; a warm request gets no header;
//   - once awake, a kube-probe request reaches the application.
//
// The access log carries cold_start_ms.
func TestLocalWakePolicy(t *testing.T) { testLocalWakePolicy(t, extprocArgs) }

// TestLocalModuleWakePolicy is TestLocalWakePolicy with the activator
// module (`--activator=module`): the module evaluates the policy inside
// Envoy and sets the cold-start header itself.
func TestLocalModuleWakePolicy(t *testing.T) { testLocalWakePolicy(t, moduleArgs(t)) }

func testLocalWakePolicy(t *testing.T, args []string) {
	policy := `rules:
  - name: kube-probe
    userAgent: "kube-probe/.*"
    response:
      status: 200
      headers: {content-type: text/plain, x-from: thaw}
      body: "probe ok\n"
  - name: bots
    userAgent: ".*(bot|crawler|spider).*"
waitingPage:
  refresh: 1s
coldStartHeader: true
`
	dir := t.TempDir()
	accessLog := filepath.Join(dir, "access.log")
	cfg := "revisions:\n" +
		wakeRevision(t, revisionYAML{Name: "sleepy", Host: "sleepy.test", StartupDelay: 300 * time.Millisecond,
			Autoscaling: fast(nil)}, policy) +
		wakeRevision(t, revisionYAML{Name: "cold", Host: "cold.test", StartupDelay: 300 * time.Millisecond,
			Autoscaling: fast(nil)}, "coldStartHeader: true\n")
	th := harness.StartThaw(t, harness.ThawOptions{Config: cfg, Args: append([]string{"--access-log", accessLog}, args...)})
	c := client(30 * time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()

	// Probes and bots at zero: static answers, no wake.
	probe := map[string]string{"User-Agent": "kube-probe/1.37"}
	end := time.Now().Add(10 * time.Second)
	probes := 0
	for time.Now().Before(end) {
		code, body, hdr, err := send(ctx, c, th, "GET", "sleepy.test", "/healthz", probe)
		if err != nil || code != 200 || body != "probe ok\n" || hdr.Get("x-from") != "thaw" {
			t.Fatalf("probe at zero: code=%d err=%v body=%q headers=%v", code, err, body, hdr)
		}
		probes++
		rows, err := th.Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if row := rows["local/sleepy"]; num(row, "desired") > 0 || num(row, "ready") > 0 {
			t.Fatalf("a probe woke the revision after %d probes: status %v", probes, row)
		}
		time.Sleep(500 * time.Millisecond)
	}
	code, body, hdr, err := send(ctx, c, th, "GET", "sleepy.test", "/", map[string]string{"User-Agent": "Googlebot/2.1"})
	if err != nil || code != 503 || hdr.Get("Retry-After") == "" || !strings.Contains(body, "asleep") {
		t.Fatalf("bot at zero: code=%d err=%v body=%q headers=%v", code, err, body, hdr)
	}
	t.Logf("%d kube-probe requests answered at zero over 10 s; revision stayed at zero", probes)

	// A browser gets the waiting page at once and the revision wakes.
	start := time.Now()
	code, body, hdr, err = send(ctx, c, th, "GET", "sleepy.test", "/", map[string]string{"Accept": browserAccept, "User-Agent": "Mozilla/5.0"})
	took := time.Since(start)
	if err != nil || code != 503 || !strings.Contains(body, `http-equiv="refresh" content="1"`) ||
		!strings.HasPrefix(hdr.Get("Content-Type"), "text/html") || hdr.Get("Cache-Control") != "no-store" {
		t.Fatalf("browser at zero: code=%d err=%v body=%.200q headers=%v", code, err, body, hdr)
	}
	t.Logf("waiting page answered in %v (the application takes 300 ms to start)", took)
	waitStatus(t, th, "local/sleepy", 20*time.Second, "woken by the waiting page", func(row map[string]any) bool {
		return num(row, "ready") >= 1
	})
	// The page's reload reaches the application.
	code, body, _, err = send(ctx, c, th, "GET", "sleepy.test", "/", map[string]string{"Accept": browserAccept})
	if err != nil || code != 200 || !strings.Contains(body, "hello from sleepy") {
		t.Fatalf("browser reload after wake: code=%d err=%v body=%q", code, err, body)
	}
	// Awake: a probe reaches the application too.
	code, body, _, err = send(ctx, c, th, "GET", "sleepy.test", "/", probe)
	if err != nil || code != 200 || !strings.Contains(body, "hello from sleepy") {
		t.Fatalf("probe while awake: code=%d err=%v body=%q", code, err, body)
	}

	// curl at zero is held, answered by the application, with the header.
	code, body, hdr, err = send(ctx, c, th, "GET", "cold.test", "/", map[string]string{"User-Agent": "curl/8.5.0", "Accept": "*/*"})
	if err != nil || code != 200 || !strings.Contains(body, "hello from cold") {
		t.Fatalf("curl at zero: code=%d err=%v body=%q", code, err, body)
	}
	held := hdr.Get("X-Thaw-Cold-Start")
	if held == "" || held == "0" {
		t.Fatalf("held request: x-thaw-cold-start = %q, want the milliseconds held (>0); headers %v", held, hdr)
	}
	t.Logf("curl held %s ms", held)
	code, _, hdr, err = send(ctx, c, th, "GET", "cold.test", "/", nil)
	if err != nil || code != 200 || hdr.Get("X-Thaw-Cold-Start") != "" {
		t.Fatalf("warm request: code=%d err=%v x-thaw-cold-start=%q, want none", code, err, hdr.Get("X-Thaw-Cold-Start"))
	}

	// Both activators count their answers into the same metrics (the
	// module reports them every second).
	var rules, bots, pages float64
	for i := 0; ; i++ {
		rules = metricSum(t, th, `thaw_wake_rule_responses_total{revision="local/sleepy",rule="kube-probe"}`)
		bots = metricSum(t, th, `thaw_wake_rule_responses_total{revision="local/sleepy",rule="bots"}`)
		pages = metricSum(t, th, `thaw_wake_waiting_pages_total{revision="local/sleepy"}`)
		if rules >= float64(probes) && bots >= 1 && pages >= 1 {
			break
		}
		if i == 50 {
			t.Fatalf("wake metrics: kube-probe %v (want >= %d), bots %v, waiting pages %v (want >= 1)", rules, probes, bots, pages)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if usesModule(args) {
		if n := extprocAnswers(t, th); n != 0 {
			t.Errorf("thaw's ext_proc answered %v requests; with the module it must see none", n)
		}
	}

	// The access log has the field (Envoy flushes it within a second).
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, _ := os.ReadFile(accessLog)
		if strings.Contains(string(b), `"cold_start_ms":"`+held+`"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("access log has no cold_start_ms %s:\n%s", held, b)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// withWake is a Revision spec with a wake policy (kube_revision_test.go's
// admission cases).
func withWake(w map[string]any) map[string]any {
	return map[string]any{"scaleTargetRef": deployRef("x"), "wake": w}
}
