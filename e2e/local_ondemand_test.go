//go:build e2e

package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/thaw-dev/thaw/e2e/harness"
)

// TestLocalOnDemandHosts runs `thaw local --activator=module
// --on-demand-hosts` with real Envoy (issue 28, docs/scaling.md "Virtual
// hosts on demand"). Envoy starts with the hosts of awake revisions only:
// warm (initial scale 1) and shop.test's split host (v1, min-scale 1);
// not cold's nor v2's tag host (both at zero). Then:
//   - an unknown host gets 404, not a hang, twice, and both show in
//     thaw_envoy_http_refusals_total{counter="no_route"};
//   - a request for cold, whose host Envoy lacks (sent in other letter
//     case and with a port), is paused by envoy.filters.http.on_demand,
//     fetched over VHDS (thaw resolves the Host with Envoy's rules), held
//     by the module and answered by the woken backend; so is a request
//     for v2's tag host;
//   - warm, never requested, goes back to zero and leaves Envoy after
//     --on-demand-evict-after; its next request fetches it and wakes it;
//   - cold, which this Envoy asked for, stays in Envoy back at zero (Envoy
//     answers a repeated request for an alias itself) and wakes again.
func TestLocalOnDemandHosts(t *testing.T) {
	atZero := fast(map[string]string{"initial-scale": "0"})
	th := harness.StartThaw(t, harness.ThawOptions{
		Args: append(moduleArgs(t), "--on-demand-hosts", "--on-demand-evict-after=2s"),
		Config: localConfig(t,
			revisionYAML{Name: "cold", Host: "cold.test", Autoscaling: atZero},
			revisionYAML{Name: "v1", Host: "shop.test", Traffic: "{percent: 90}", Autoscaling: fast(map[string]string{"min-scale": "1"})},
			revisionYAML{Name: "v2", Host: "shop.test", Traffic: "{percent: 10, tag: canary}", Autoscaling: atZero},
		)})
	envoy := &envoyAdmin{url: th.EnvoyAdminURL}
	vhosts := func() string {
		t.Helper()
		out, err := envoy.get("/config_dump?resource=dynamic_route_configs")
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	has := func(domain string) bool { return strings.Contains(vhosts(), `"`+domain+`"`) }
	waitStatus(t, th, "local/v1", 20*time.Second, "v1 ready", func(r map[string]any) bool { return num(r, "ready") >= 1 })
	waitUntil(t, "the awake split host in Envoy", 10*time.Second, func() bool { return has("shop.test") })
	dump := vhosts()
	if strings.Contains(dump, `"*"`) {
		t.Fatalf("thaw_http still has a catch-all with hosts on demand:\n%.3000s", dump)
	}
	for _, d := range []string{"cold.test", "canary-shop.test"} {
		if strings.Contains(dump, `"`+d+`"`) {
			t.Fatalf("Envoy holds %s (a revision at zero) before any request:\n%.3000s", d, dump)
		}
	}
	if l, err := envoy.get("/config_dump?resource=dynamic_listeners"); err != nil || !strings.Contains(l, "envoy.filters.http.on_demand") {
		t.Fatalf("listener thaw_http has no on_demand filter (err %v)", err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	c := client(20 * time.Second)
	want := func(host, body, what string) {
		t.Helper()
		code, got, _, err := get(ctx, c, th, host, "/")
		if err != nil || code != 200 || !strings.Contains(got, body) {
			t.Fatalf("%s (Host %s): code=%d err=%v body=%q, want %q", what, host, code, err, got, body)
		}
	}
	for i := range 2 {
		if code, body, _, err := get(ctx, c, th, "nobody.test", "/"); err != nil || code != 404 {
			t.Fatalf("unknown host, try %d: code=%d err=%v body=%q, want 404", i, code, err, body)
		}
	}
	want("COLD.Test:8080", "hello from cold", "first request to cold (not in Envoy)")
	want("cold.test", "hello from cold", "warm request to cold")
	if !has("cold.test") {
		t.Fatal("the fetched host is not in Envoy")
	}
	if has("nobody.test") {
		t.Fatal("Envoy holds the unknown host")
	}
	m := metricsText(t, th)
	for _, series := range []string{`thaw_xds_on_demand_answers_total{result="found"}`, `thaw_xds_on_demand_answers_total{result="unknown"}`} {
		if !strings.Contains(m, series+" ") || strings.Contains(m, series+" 0\n") {
			t.Errorf("metric %s missing or 0", series)
		}
	}
	// Without the catch-all the unknown host's 404 is Envoy's router
	// finding no route (http.thaw_http.no_route), not a direct response:
	// both tries are counted, and nothing else was unroutable.
	for _, line := range []string{`thaw_envoy_http_refusals_total{counter="no_route"} 2`, `thaw_envoy_http_refusals_total{counter="rq_direct_response"} 0`} {
		if !strings.Contains(m, line+"\n") {
			t.Errorf("thaw /metrics lacks %q; refusal lines:\n%s", line, grepLines(m, "thaw_envoy_http_refusals_total"))
		}
	}

	// v2 woken by its share of the split: its tag host becomes resident,
	// and leaves Envoy once v2 is back at zero.
	if counts, failed, fails := splitLoad(ctx, th, "shop.test", 100, 10); failed > 0 || counts["v2"] == 0 {
		t.Fatalf("100 requests to shop.test: %v, %d failed (%v); want v2 woken", counts, failed, fails)
	}
	waitUntil(t, "v2's tag host resident in Envoy", 10*time.Second, func() bool { return has("canary-shop.test") })
	waitStatus(t, th, "local/v2", 30*time.Second, "v2 back at zero", func(r map[string]any) bool {
		return num(r, "ready") == 0 && num(r, "desired") == 0
	})
	waitUntil(t, "canary-shop.test evicted from Envoy", 10*time.Second, func() bool { return !has("canary-shop.test") })
	if !has("shop.test") {
		t.Fatal("the awake split host shop.test was evicted")
	}
	want("canary-shop.test", "hello from v2", "request to v2's tag host after its eviction")

	// cold, asked for by this Envoy, stays there at zero and wakes again.
	waitStatus(t, th, "local/cold", 30*time.Second, "cold back at zero", func(r map[string]any) bool {
		return num(r, "ready") == 0 && num(r, "desired") == 0
	})
	if !has("cold.test") {
		t.Fatal("cold.test, which this Envoy asked for, left it")
	}
	want("cold.test", "hello from cold", "request to cold back at zero")
}

// TestLocalOnDemandHostsAllIdle: with --on-demand-hosts and every revision
// at zero, thaw's first VHDS answer holds no virtual host. Envoy 1.40
// ignores an empty first answer and keeps listener thaw_http warming (15 s
// initial fetch timeout), so thaw answers a body-less anchor instead: once
// thaw says ready, the listener takes the first request at once, fetches
// the host and wakes the revision.
func TestLocalOnDemandHostsAllIdle(t *testing.T) {
	th := harness.StartThaw(t, harness.ThawOptions{
		Args:   append(moduleArgs(t), "--on-demand-hosts"),
		Config: localConfig(t, revisionYAML{Name: "cold", Host: "cold.test", Autoscaling: fast(map[string]string{"initial-scale": "0"})}),
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	code, body, _, err := get(ctx, client(20*time.Second), th, "cold.test", "/")
	if err != nil || code != 200 || !strings.Contains(body, "hello from cold") {
		t.Fatalf("first request right after ready: code=%d err=%v body=%q, want cold's answer", code, err, body)
	}
}
