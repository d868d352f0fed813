//go:build e2e

package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/thaw-dev/thaw/e2e/harness"
)

// TestLocalIdleHoldPath runs `thaw local --idle-hold-path` with real
// Envoy: revisions at zero have no cluster in Envoy (admin /clusters);
// a request for one is held on the shared hold path, wakes it, and is
// answered by its backend (a client-sent x-thaw-revision naming another
// revision changes nothing); the woken revision gets its cluster, and
// after it scales back to zero the cluster is gone again. A 10% split
// member at zero is woken by its share through the hold path, and a 0%
// member at zero never gets a cluster. With thaw killed, a request for a
// revision at zero gets 503 with Retry-After, never 500.
func TestLocalIdleHoldPath(t *testing.T) {
	atZero := fast(map[string]string{"initial-scale": "0"})
	th := harness.StartThaw(t, harness.ThawOptions{Args: append([]string{"--idle-hold-path"}, extprocArgs...), Config: localConfig(t,
		revisionYAML{Name: "cold", Host: "cold.test", StartupDelay: 100 * time.Millisecond, Autoscaling: atZero},
		revisionYAML{Name: "other", Host: "other.test", Autoscaling: atZero},
		revisionYAML{Name: "v1", Host: "shop.test", Traffic: "{percent: 90}", Autoscaling: fast(nil)},
		revisionYAML{Name: "v2", Host: "shop.test", Traffic: "{percent: 10, tag: canary}", Autoscaling: atZero},
		revisionYAML{Name: "v3", Host: "shop.test", Traffic: "{percent: 0, tag: zero}", Autoscaling: atZero},
	)})
	envoy := &envoyAdmin{url: th.EnvoyAdminURL}
	hasCluster := func(name string) bool {
		t.Helper()
		out, err := envoy.get("/clusters")
		if err != nil {
			t.Fatal(err)
		}
		return strings.Contains(out, name+"::")
	}
	for _, c := range []string{"rev_local_cold", "rev_local_other", "rev_local_v2", "rev_local_v3"} {
		if hasCluster(c) {
			t.Fatalf("Envoy has cluster %s for a revision at zero", c)
		}
	}
	if !hasCluster("thaw_hold") {
		t.Fatal("Envoy has no thaw_hold cluster")
	}

	// Cold start through the hold path; the client's x-thaw-revision is
	// replaced by the route's.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	code, body, err := getSpoofed(ctx, client(30*time.Second), th, "cold.test")
	if err != nil || code != 200 || !strings.Contains(body, "hello from cold") {
		t.Fatalf("cold start through the hold path: code=%d err=%v body=%q, want cold's answer", code, err, body)
	}
	if r := statusRow(t, ctx, th, "local/other"); num(r, "ready") != 0 {
		t.Fatalf("the spoofed header woke local/other: %v", r)
	}
	waitUntil(t, "cold's cluster in Envoy", 10*time.Second, func() bool { return hasCluster("rev_local_cold") })

	// The split: v2 (10%) is woken by its share; v3 (0%) never.
	counts, failed, fails := splitLoad(ctx, th, "shop.test", 300, 10)
	if failed > 0 || counts["v1"]+counts["v2"] != 300 || counts["v2"] == 0 {
		t.Fatalf("300 requests to shop.test: %v, %d failed (%v); want v1 and v2 only, v2 > 0", counts, failed, fails)
	}
	if hasCluster("rev_local_v3") {
		t.Error("the 0% revision at zero got a cluster")
	}

	// Back to zero: the cluster goes once Envoy routes cold to the hold
	// path again.
	waitStatus(t, th, "local/cold", 40*time.Second, "scaled to zero", func(r map[string]any) bool {
		return r["mode"] == "proxy" && num(r, "ready") == 0 && num(r, "desired") == 0
	})
	waitUntil(t, "cold's cluster removed", 10*time.Second, func() bool { return !hasCluster("rev_local_cold") })

	// thaw killed: a revision at zero answers 503 with Retry-After.
	th.Kill()
	kctx, kcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer kcancel()
	code, _, hdr, err := get(kctx, client(10*time.Second), th, "other.test", "/")
	if err != nil || code != 503 || hdr.Get("Retry-After") == "" {
		t.Errorf("revision at zero with thaw down: code=%d err=%v Retry-After=%q; want 503 with Retry-After",
			code, err, hdr.Get("Retry-After"))
	}
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
