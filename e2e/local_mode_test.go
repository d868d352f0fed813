//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/thaw-dev/thaw/e2e/harness"
)

// TestLocalServeModeWithoutContainerConcurrency: with one ready backend and
// the default target burst capacity (211) every revision's excess burst
// capacity is negative. A revision with container concurrency 0 is in serve
// mode anyway (the activator would only forward), one with container
// concurrency > 0 or target-burst-capacity -1 stays in proxy mode. Checked
// in thaw's status on both activators; then each activator's own contract:
//   - ext_proc: Envoy's endpoints of a proxy-mode revision are the internal
//     activator listener, a serve-mode one's its backend; ext_proc answers
//     none of the serve-mode requests and the proxy-mode ones;
//   - module: Envoy's endpoints are the backends in both modes (the module
//     holds, limits and pins inside Envoy) and ext_proc answers nothing.
//
// On both, a burst to the revision with container concurrency 4 is served
// in full and never has more than 4 requests in flight on its backend.
func TestLocalServeModeWithoutContainerConcurrency(t *testing.T) {
	t.Run("extproc", func(t *testing.T) { testServeModeWithoutContainerConcurrency(t, extprocArgs) })
	t.Run("module", func(t *testing.T) { testServeModeWithoutContainerConcurrency(t, moduleArgs(t)) })
}

// extprocArgs pin `thaw local` to the ext_proc activator (its default is
// the module): tests of the ext_proc path's own contract pass them, and
// each test that has a module twin (TestLocalModuleX, moduleArgs) pins its
// ext_proc half with them, so the suite covers both paths.
var extprocArgs = []string{"--activator=extproc"}

// usesModule reports whether thaw local's args ask for the module
// (moduleArgs).
func usesModule(args []string) bool { return slices.Contains(args, "--activator=module") }

func testServeModeWithoutContainerConcurrency(t *testing.T, args []string) {
	module := usesModule(args)
	one := map[string]string{"min-scale": "1", "max-scale": "1"}
	with := func(extra map[string]string) map[string]string {
		m := fast(one)
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	th := harness.StartThaw(t, harness.ThawOptions{Args: args, Config: localConfig(t,
		revisionYAML{Name: "open", Host: "open.test", Autoscaling: with(nil)},
		revisionYAML{Name: "limited", Host: "limited.test", Latency: 100 * time.Millisecond,
			Autoscaling: with(map[string]string{"container-concurrency": "4"})},
		revisionYAML{Name: "forced", Host: "forced.test", Autoscaling: with(map[string]string{"target-burst-capacity": "-1"})},
	)})
	decided := func(r map[string]any) bool {
		return num(r, "ready") == 1 && num(r, "desired") >= 0 && num(r, "excessBurstCapacity") < 0
	}
	waitStatus(t, th, "local/limited", 60*time.Second, "proxy mode with one backend and negative EBC", func(r map[string]any) bool {
		return decided(r) && r["mode"] == "proxy"
	})
	waitStatus(t, th, "local/forced", 60*time.Second, "proxy mode with one backend (TBC -1)", func(r map[string]any) bool {
		return num(r, "ready") == 1 && r["mode"] == "proxy"
	})
	waitStatus(t, th, "local/open", 60*time.Second, "a decision with negative EBC and one backend", decided)
	// The mode follows each decision within milliseconds; hold the check over
	// more than two decider ticks (2 s each) so a flip would be seen.
	for i := 0; i < 25; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		rows, err := th.Status(ctx)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		if r := rows["local/open"]; r["mode"] != "serve" {
			t.Fatalf("container concurrency 0 with a ready backend: mode %v, want serve (%v)", r["mode"], r)
		}
		time.Sleep(200 * time.Millisecond)
	}

	admin := &envoyAdmin{url: th.EnvoyAdminURL}
	for name, proxy := range map[string]bool{"rev_local_open": false, "rev_local_limited": true, "rev_local_forced": true} {
		internal, err := admin.endpointsInternal(name)
		if err != nil {
			t.Fatal(err)
		}
		// The module needs no internal listener: its endpoints are the
		// backends whatever the mode.
		if want := proxy && !module; internal != want {
			t.Errorf("Envoy cluster %s: endpoint is the internal activator listener = %v, want %v", name, internal, want)
		}
	}

	c := client(10 * time.Second)
	before := extprocAnswers(t, th)
	for i := 0; i < 20; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		code, body, _, err := get(ctx, c, th, "open.test", "/")
		cancel()
		if err != nil || code != 200 || !strings.Contains(body, "hello from open") {
			t.Fatalf("open.test: code=%d err=%v body=%q", code, err, body)
		}
	}
	if after := extprocAnswers(t, th); after != before {
		t.Errorf("ext_proc answers went from %v to %v for 20 serve-mode requests: the activator is still in the path", before, after)
	}
	// 12 at once through container concurrency 4 on one backend: 8 wait
	// in the activator (thaw's ext_proc, or the module inside Envoy).
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if ok, fails := burst(ctx, c, th, "limited.test", "hello from limited", 12); ok != 12 {
		t.Fatalf("limited.test: %d of 12 requests failed: %v", 12-ok, fails)
	}
	st, err := fetchWorkloadStats(ctx, c, th, "limited.test")
	if err != nil {
		t.Fatal(err)
	}
	if st.Max < 1 || st.Max > 4 {
		t.Errorf("limited.test: at most %d requests in flight on its backend; container concurrency is 4", st.Max)
	}
	after := extprocAnswers(t, th)
	switch {
	case module && after != 0:
		t.Errorf("ext_proc answered %v requests; on the module it must see none", after)
	case !module && after <= before:
		t.Errorf("ext_proc answers %v after proxy-mode requests, want more than %v", after, before)
	}
}

// endpointsInternal reports whether one of Envoy's endpoints of cluster name
// is an internal listener address (proxy mode: the activator at priority 0,
// the ready backends behind it at priority 1 for failover) rather than only
// socket addresses (serve mode).
func (e *envoyAdmin) endpointsInternal(name string) (bool, error) {
	c := &http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(e.url + "/clusters?format=json")
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	var doc struct {
		ClusterStatuses []struct {
			Name         string `json:"name"`
			HostStatuses []struct {
				Address map[string]json.RawMessage `json:"address"`
			} `json:"host_statuses"`
		} `json:"cluster_statuses"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		return false, fmt.Errorf("decode /clusters: %w", err)
	}
	for _, cs := range doc.ClusterStatuses {
		if cs.Name != name {
			continue
		}
		if len(cs.HostStatuses) == 0 {
			return false, fmt.Errorf("cluster %s has no hosts", name)
		}
		for _, h := range cs.HostStatuses {
			if _, internal := h.Address["envoy_internal_address"]; internal {
				return true, nil
			}
		}
		return false, nil
	}
	return false, fmt.Errorf("cluster %s not in Envoy's /clusters", name)
}

// extprocAnswers sums thaw_extproc_responses_total over outcomes from thaw's
// admin /metrics.
func extprocAnswers(t *testing.T, th *harness.Thaw) float64 {
	t.Helper()
	return metricSum(t, th, "thaw_extproc_responses_total{")
}

// metricSum sums the samples of thaw's /metrics whose line starts with
// prefix (a metric name and "{" for every series, or more labels).
func metricSum(t *testing.T, th *harness.Thaw, prefix string) float64 {
	t.Helper()
	c := &http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(th.AdminURL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var sum float64
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, prefix) {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err != nil {
			t.Fatalf("metrics line %q: %v", line, err)
		}
		sum += v
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return sum
}
