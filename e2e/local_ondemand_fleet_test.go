//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/thaw-dev/thaw/e2e/harness"
	"github.com/thaw-dev/thaw/envoy"
)

// TestLocalOnDemandHostsTwoEnvoys runs `thaw local --activator=module
// --on-demand-hosts` with a second real Envoy (envoy-b, named by
// --service-node) on thaw's xDS port beside thaw's own (envoy-a); both
// bind listener thaw_http's port (SO_REUSEPORT), and the test pins one
// keep-alive connection to each (docs/scaling.md, "Virtual hosts on
// demand"). Each Envoy's activator module reports as its own node. Then:
//   - cold (at zero) is in neither Envoy; a request through a fetches it
//     and wakes it. While awake its host is resident: b receives it too
//     without asking.
//   - cold goes back to zero (both Envoys confirm) and leaves b after
//     --on-demand-evict-after; a, which asked, keeps it.
//   - b asks later and gets the same virtual host as a holds; b keeps it
//     past --on-demand-evict-after.
//   - --on-demand-hosts-per-envoy=2 bounds each Envoy's record of the
//     Hosts it asked for on its own: a asks u1, u2, u3 (404), b asks u1
//     (404). A revision added for u1.test (a reload) is answered to b
//     (which still remembers u1) and not to a (whose record forgot u1: its
//     Envoy answers its cached 404, the documented limit). b's request
//     wakes the revision, whose host then becomes resident in a too.
func TestLocalOnDemandHostsTwoEnvoys(t *testing.T) {
	path := t.TempDir() + "/thaw.yaml"
	warm := revisionYAML{Name: "warm", Host: "warm.test", Autoscaling: fast(map[string]string{"min-scale": "1"})}
	cold := revisionYAML{Name: "cold", Host: "cold.test", Autoscaling: fast(map[string]string{"initial-scale": "0"})}
	late := revisionYAML{Name: "late", Host: "u1.test", Autoscaling: fast(map[string]string{"initial-scale": "0"})}
	writeConfig(t, path, localConfig(t, warm, cold))
	th := harness.StartThaw(t, harness.ThawOptions{ConfigPath: path, Args: append(moduleArgs(t), "--on-demand-hosts",
		"--on-demand-evict-after=2s", "--on-demand-hosts-per-envoy=2", "--reload-interval=200ms")})
	boot, err := envoy.RenderBootstrap(envoy.BootstrapParams{NodeID: "envoy-b", Cluster: "thaw-local",
		XDSAddress: th.GRPCAddress, ExtProcAddress: th.GRPCAddress, StatsAddress: th.GRPCAddress})
	if err != nil {
		t.Fatal(err)
	}
	a := &harness.Envoy{AdminURL: th.EnvoyAdminURL}
	b := harness.StartEnvoy(t, harness.EnvoyOptions{Bootstrap: string(boot), Name: "envoy-b", Args: []string{"--service-node", "envoy-b"}})
	waitMetric(t, th.AdminURL, "thaw_xds_connected_nodes 2")
	// Each module names its own Envoy (--service-node wins over the node
	// thaw local's listener names), so thaw tells the two apart.
	waitMetric(t, th.AdminURL, "thaw_module_connected_nodes 2")
	waitStatus(t, th, "local/warm", 20*time.Second, "warm ready", func(r map[string]any) bool { return num(r, "ready") >= 1 })
	for _, e := range []*harness.Envoy{a, b} {
		waitUntil(t, "the resident host warm.test in "+e.AdminURL, 10*time.Second, func() bool { return vhostOf(t, e, "warm.test") != "" })
	}
	ctx, cancel := context.WithTimeout(t.Context(), 55*time.Second)
	defer cancel()
	toA, toB := pinClients(ctx, t, th, a, b)
	want := func(c *http.Client, via, host string, code int, body string) {
		t.Helper()
		got, gotBody, _, err := get(ctx, c, th, host, "/")
		if err != nil || got != code || !strings.Contains(gotBody, body) {
			t.Fatalf("via %s, Host %s: code=%d err=%v body=%q, want %d %q", via, host, got, err, gotBody, code, body)
		}
	}
	for _, e := range []*harness.Envoy{a, b} {
		if vhostOf(t, e, "cold.test") != "" {
			t.Fatalf("%s holds cold.test (a revision at zero) before any request", e.AdminURL)
		}
	}

	// a asks: cold wakes, and is resident in b while awake.
	const vhBytes = `thaw_xds_pushed_bytes_total{type="virtualhosts"}`
	wakeBytes := metricValue(t, th, vhBytes)
	want(toA, "envoy-a", "cold.test", 200, "hello from cold")
	if vhostOf(t, a, "cold.test") == "" {
		t.Fatal("envoy-a lacks cold.test after fetching it")
	}
	waitUntil(t, "cold.test resident in envoy-b while cold is awake", 10*time.Second, func() bool { return vhostOf(t, b, "cold.test") != "" })
	t.Logf("virtual host bytes pushed for the wake through envoy-a (a's answer and b's resident copy): %.0f", metricValue(t, th, vhBytes)-wakeBytes)
	waitStatus(t, th, "local/cold", 30*time.Second, "cold back at zero (confirmed by both Envoys)", func(r map[string]any) bool {
		return num(r, "ready") == 0 && num(r, "desired") == 0
	})
	waitUntil(t, "cold.test evicted from envoy-b, which never asked", 10*time.Second, func() bool { return vhostOf(t, b, "cold.test") == "" })
	if vhostOf(t, a, "cold.test") == "" {
		t.Fatal("cold.test left envoy-a, which asked for it")
	}

	// b asks later: the same answer as a holds, and kept past the eviction.
	want(toB, "envoy-b", "cold.test", 200, "hello from cold")
	waitStatus(t, th, "local/cold", 30*time.Second, "cold back at zero again", func(r map[string]any) bool {
		return num(r, "ready") == 0 && num(r, "desired") == 0
	})
	var va, vb string
	waitUntil(t, "envoy-a and envoy-b hold the same cold.test", 10*time.Second, func() bool {
		va, vb = vhostOf(t, a, "cold.test"), vhostOf(t, b, "cold.test")
		return va != "" && va == vb
	})
	t.Logf("cold.test's virtual host at zero, as both Envoys hold it: %d bytes of JSON", len(va))
	time.Sleep(4 * time.Second) // > --on-demand-evict-after plus one sweep
	if vhostOf(t, b, "cold.test") == "" {
		t.Fatal("cold.test left envoy-b, which asked for it")
	}

	// The per-Envoy bound on remembered Hosts.
	for _, h := range []string{"u1.test", "u2.test", "u3.test"} {
		want(toA, "envoy-a", h, 404, "")
	}
	want(toB, "envoy-b", "u1.test", 404, "")
	bytesBefore := metricValue(t, th, vhBytes)
	writeConfig(t, path, localConfig(t, warm, cold, late))
	waitUntil(t, "u1.test answered again to envoy-b, which remembers it", 15*time.Second, func() bool { return vhostOf(t, b, "u1.test") != "" })
	t.Logf("virtual host bytes pushed after the reload (b's re-answer): %.0f", metricValue(t, th, vhBytes)-bytesBefore)
	if vhostOf(t, a, "u1.test") != "" {
		t.Fatal("u1.test sent to envoy-a, whose record of 2 Hosts forgot u1 (it asked u2 and u3 after it)")
	}
	want(toA, "envoy-a", "u1.test", 404, "")
	want(toB, "envoy-b", "u1.test", 200, "hello from late")
	waitUntil(t, "u1.test resident in envoy-a once late is awake", 10*time.Second, func() bool { return vhostOf(t, a, "u1.test") != "" })
	want(toA, "envoy-a", "u1.test", 200, "hello from late")
}

// vhostOf returns the virtual host of e's route configuration thaw_http
// whose domains hold domain, as canonical JSON ("" when e has none).
func vhostOf(t *testing.T, e *harness.Envoy, domain string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	body, code, err := e.Admin(ctx, "/config_dump?resource=dynamic_route_configs")
	if err != nil || code != 200 {
		t.Fatalf("%s config_dump: %d %v", e.AdminURL, code, err)
	}
	var doc any
	if err := json.Unmarshal([]byte(body), &doc); err != nil {
		t.Fatalf("%s config_dump: %v", e.AdminURL, err)
	}
	var found any
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if ds, ok := v["domains"].([]any); ok && slices.Contains(ds, any(domain)) {
				found = v
				return
			}
			for _, c := range v {
				walk(c)
			}
		case []any:
			for _, c := range v {
				walk(c)
			}
		}
	}
	walk(doc)
	if found == nil {
		return ""
	}
	out, _ := json.Marshal(found) // map keys sorted
	return string(out)
}

// pinClients returns two HTTP clients, each holding one keep-alive
// connection to thaw's HTTP port that the kernel gave to envoy-a and to
// envoy-b (both bind it with SO_REUSEPORT): a connection's Envoy is the
// one whose http.thaw_http.downstream_rq_total counted its first request
// (to the resident warm.test). At most 40 connections are tried.
func pinClients(ctx context.Context, t *testing.T, th *harness.Thaw, a, b *harness.Envoy) (toA, toB *http.Client) {
	t.Helper()
	const stat = "http.thaw_http.downstream_rq_total"
	count := func(e *harness.Envoy) int64 {
		v, err := e.Stat(ctx, stat)
		if err != nil {
			t.Fatalf("%s %s: %v", e.AdminURL, stat, err)
		}
		return v
	}
	addr := strings.TrimPrefix(th.HTTPURL, "http://")
	for try := 0; try < 40 && (toA == nil || toB == nil); try++ {
		conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		var used atomic.Bool
		tr := &http.Transport{MaxConnsPerHost: 1, MaxIdleConnsPerHost: 1, IdleConnTimeout: time.Minute,
			DialContext: func(context.Context, string, string) (net.Conn, error) {
				if used.Swap(true) {
					return nil, errors.New("the pinned connection was closed")
				}
				return conn, nil
			}}
		c := &http.Client{Timeout: 20 * time.Second, Transport: tr}
		ba, bb := count(a), count(b)
		if code, body, _, err := get(ctx, c, th, "warm.test", "/"); err != nil || code != 200 {
			t.Fatalf("pinning request: code=%d err=%v body=%q", code, err, body)
		}
		da, db := count(a)-ba, count(b)-bb
		switch {
		case da == 1 && db == 0 && toA == nil:
			toA = c
		case db == 1 && da == 0 && toB == nil:
			toB = c
		default:
			tr.CloseIdleConnections()
		}
	}
	if toA == nil || toB == nil {
		t.Fatalf("40 connections did not reach both Envoys (a pinned: %v, b pinned: %v)", toA != nil, toB != nil)
	}
	t.Cleanup(func() {
		for _, c := range []*http.Client{toA, toB} {
			c.CloseIdleConnections()
		}
	})
	return toA, toB
}
