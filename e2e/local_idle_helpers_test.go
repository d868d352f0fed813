//go:build e2e

package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/thaw-dev/thaw/e2e/harness"
)

// idleFleet is the thaw local that the idle-revision tests start
// (TestLocalIdleHoldPath on ext_proc, TestLocalModuleIdleClusters on the
// module): cold (100 ms startup) and other at zero on hosts of their own,
// and shop.test split among v1 (90%, autoscaling v1), v2 (10%, tag
// canary, at zero) and v3 (0%, tag zero, at zero).
type idleFleet struct {
	t     *testing.T
	th    *harness.Thaw
	envoy *envoyAdmin
}

// idleRevisionsAtZero are the clusters idleFleet's revisions at zero would
// have.
var idleRevisionsAtZero = []string{"rev_local_cold", "rev_local_other", "rev_local_v2", "rev_local_v3"}

// startIdleFleet starts thaw local with args and idleFleet's revisions.
func startIdleFleet(t *testing.T, args []string, v1 map[string]string) *idleFleet {
	t.Helper()
	atZero := fast(map[string]string{"initial-scale": "0"})
	th := harness.StartThaw(t, harness.ThawOptions{Args: args, Config: localConfig(t,
		revisionYAML{Name: "cold", Host: "cold.test", StartupDelay: 100 * time.Millisecond, Autoscaling: atZero},
		revisionYAML{Name: "other", Host: "other.test", Autoscaling: atZero},
		revisionYAML{Name: "v1", Host: "shop.test", Traffic: "{percent: 90}", Autoscaling: v1},
		revisionYAML{Name: "v2", Host: "shop.test", Traffic: "{percent: 10, tag: canary}", Autoscaling: atZero},
		revisionYAML{Name: "v3", Host: "shop.test", Traffic: "{percent: 0, tag: zero}", Autoscaling: atZero},
	)})
	return &idleFleet{t: t, th: th, envoy: &envoyAdmin{url: th.EnvoyAdminURL}}
}

// hasCluster reports whether Envoy holds cluster name (admin /clusters).
func (f *idleFleet) hasCluster(name string) bool {
	f.t.Helper()
	out, err := f.envoy.get("/clusters")
	if err != nil {
		f.t.Fatal(err)
	}
	return strings.Contains(out, name+"::")
}

// checkNoClusterAtZero fails the test when Envoy holds a cluster of a
// revision at zero.
func (f *idleFleet) checkNoClusterAtZero() {
	f.t.Helper()
	for _, c := range idleRevisionsAtZero {
		if f.hasCluster(c) {
			f.t.Fatalf("Envoy has cluster %s for a revision at zero", c)
		}
	}
}

// checkSplit sends 300 requests to shop.test: v2 (10%) is woken by its
// share, v3 (0%) never gets a cluster.
func (f *idleFleet) checkSplit(ctx context.Context) {
	f.t.Helper()
	counts, failed, fails := splitLoad(ctx, f.th, "shop.test", 300, 10)
	if failed > 0 || counts["v1"]+counts["v2"] != 300 || counts["v2"] == 0 {
		f.t.Fatalf("300 requests to shop.test: %v, %d failed (%v); want v1 and v2 only, v2 > 0", counts, failed, fails)
	}
	if f.hasCluster("rev_local_v3") {
		f.t.Error("the 0% revision at zero got a cluster")
	}
}

// waitColdBackToZero waits until cold is back at zero in proxy mode and
// its cluster is gone from Envoy.
func (f *idleFleet) waitColdBackToZero() {
	f.t.Helper()
	waitStatus(f.t, f.th, "local/cold", 40*time.Second, "scaled to zero", func(r map[string]any) bool {
		return r["mode"] == "proxy" && num(r, "ready") == 0 && num(r, "desired") == 0
	})
	waitUntil(f.t, "cold's cluster removed", 10*time.Second, func() bool { return !f.hasCluster("rev_local_cold") })
}

// waitUntil polls cond every 100 ms until it holds or timeout passes.
func waitUntil(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(timeout); ; time.Sleep(100 * time.Millisecond) {
		if cond() {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, timeout)
		}
	}
}
