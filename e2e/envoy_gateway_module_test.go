//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/thaw-dev/thaw/e2e/harness"
)

// TestEnvoyGatewayModule: real Envoy Gateway (standalone) with thaw as
// its extension in module mode (`thaw local --eg-extension
// --activator=module`, EG's translation hook sending listeners). EG's own
// Envoy loads bin/thaw-activator.so: thaw's hooks name the Revision on
// its route and put the module's filter (disabled, enabled by that
// route) into EG's listener. A request to the Revision at zero is held by
// the module inside EG's Envoy and served once thaw woke it; a burst of
// 60 requests is served with no backend above its container concurrency
// (2); thaw's ext_proc answers nothing. The module identifies EG's Envoy
// by its --service-node (EG names it), the node of its EDS streams to
// thaw. A RevisionSplit's tag host wakes its 0% member through the module.
func TestEnvoyGatewayModule(t *testing.T) {
	// The merge also carries the module bridge (what `thaw run
	// --activator=module` gives EG's Envoys: listener thaw_module), here
	// a plain TCP proxy to thaw local's admin address, which serves the
	// module's endpoints; thaw local's module itself connects to that
	// address directly.
	bridgePort := harness.PickPort(t)
	env := startEGOpts(t, egOptions{thawArgs: moduleArgs(t), listeners: true, extra: egModuleSplit, mergeArgs: func(th *harness.Thaw) []string {
		return []string{"--module-address", strings.TrimPrefix(th.AdminURL, "http://"), "--module-bridge-port", fmt.Sprint(bridgePort)}
	}},
		revisionYAML{Name: "hello", Host: "hello.localhost", StartupDelay: 200 * time.Millisecond, Latency: 50 * time.Millisecond,
			Autoscaling: fast(map[string]string{"container-concurrency": "2", "max-scale": "3", "target": "2", "initial-scale": "0"})},
		revisionYAML{Name: "next", Host: "next.localhost", StartupDelay: 200 * time.Millisecond,
			Autoscaling: fast(map[string]string{"container-concurrency": "1", "initial-scale": "0"})})
	for _, rev := range []string{"local/hello", "local/next"} {
		waitStatus(t, env.thaw, rev, 10*time.Second, "at zero", func(r map[string]any) bool { return num(r, "ready") == 0 })
	}
	c := client(60 * time.Second)

	start := time.Now()
	if body := waitGateway(t, c, env, 90*time.Second); !strings.Contains(body, "hello from hello") {
		t.Fatalf("body %q, want the workload's", body)
	}
	t.Logf("first 200 through EG from zero after %v (EG's start-up included)", time.Since(start))

	dump := egConfigDump(t, env)
	if !strings.Contains(dump, `"name": "thaw_activator"`) || !strings.Contains(dump, `"disabled": true`) ||
		!strings.Contains(dump, `{\"revision\":\"local/hello\"}`) {
		t.Fatalf("EG's Envoy config has no disabled thaw_activator filter or no per-route config naming local/hello:\n%.3000s", dump)
	}
	// EG accepted the merge with the bridge, and the bridge reaches thaw.
	// (thaw local serves the module's paths on its admin address, whose
	// /readyz answers 200.)
	if code, body, _, err := egGet(c, fmt.Sprintf("http://127.0.0.1:%d/readyz", bridgePort), ""); err != nil || code != 200 {
		t.Errorf("module bridge thaw_module in EG's Envoy: %d %v %q, want thaw's admin /readyz 200", code, err, body)
	}
	if n := metricSum(t, env.thaw, "thaw_module_connected_nodes"); n < 1 {
		t.Errorf("thaw_module_connected_nodes %v: EG's Envoy's module never opened its state stream", n)
	}

	// Back to zero, then a burst from zero through the module.
	waitStatus(t, env.thaw, "local/hello", 40*time.Second, "scale to zero", func(r map[string]any) bool {
		return r["mode"] == "proxy" && num(r, "ready") == 0
	})
	const n = 60
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok, fails := 0, []string{}
	burstStart := time.Now()
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, body, _, err := egGet(c, env.gateway+"/", "")
			mu.Lock()
			defer mu.Unlock()
			if err == nil && code == 200 && strings.Contains(body, "hello from hello") {
				ok++
			} else if len(fails) < 10 {
				fails = append(fails, fmt.Sprintf("%d %v %.80q", code, err, body))
			}
		}()
	}
	wg.Wait()
	t.Logf("burst from zero: %d/%d ok in %v", ok, n, time.Since(burstStart))
	if ok != n {
		t.Fatalf("%d of %d failed: %v", n-ok, n, fails)
	}
	row := waitStatus(t, env.thaw, "local/hello", 10*time.Second, "a ready backend", func(r map[string]any) bool { return num(r, "ready") >= 1 })
	seen := map[int]int64{}
	for i := 0; i < 60 && len(seen) < int(num(row, "ready")); i++ {
		code, body, _, err := egGet(c, env.gateway+"/stats", "")
		if err != nil || code != 200 {
			t.Fatalf("/stats through EG: %d %v %q", code, err, body)
		}
		var st workloadStats
		if err := json.Unmarshal([]byte(body), &st); err != nil {
			t.Fatal(err)
		}
		seen[st.Pid] = st.Max
	}
	for pid, m := range seen {
		if m > 2 || m < 1 {
			t.Errorf("backend pid %d: max in flight %d; container concurrency is 2", pid, m)
		}
	}
	t.Logf("max in flight per backend (pid: max): %v, %v ready", seen, num(row, "ready"))
	// A RevisionSplit's tag host names its member to the module: the
	// member at zero (0%) is held and woken through it.
	if code, body, _, err := egGet(c, env.gateway+"/", "next-split.localhost"); err != nil || code != 200 || !strings.Contains(body, "hello from next") {
		t.Errorf("tag host of a split, member at zero: %d %v %q; want it held and served", code, err, body)
	}
	if a := extprocAnswers(t, env.thaw); a != 0 {
		t.Errorf("thaw's ext_proc answered %v requests; on the module path it must see none", a)
	}
}

// egConfigDump returns EG's Envoy's admin /config_dump (listeners and
// routes included).
func egConfigDump(t *testing.T, env *egEnv) string {
	t.Helper()
	admin, err := harness.EGEnvoyAdmin(env.runDir)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Get(admin + "/config_dump")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// egModuleSplit is a RevisionSplit "split" (hello 100%, next 0% with tag
// next) and its HTTPRoute on split.localhost: tag host
// next-split.localhost.
var egModuleSplit = harness.EGRevision("next") + harness.EGSplitRoute("split", "split.localhost",
	harness.EGSplitMember{RevisionName: "hello", Percent: 100}, harness.EGSplitMember{RevisionName: "next", Percent: 0, Tag: "next"})
