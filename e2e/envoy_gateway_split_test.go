//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/thaw-dev/thaw/e2e/harness"
)

// TestEnvoyGatewayRevisionSplit routes an HTTPRoute through a
// RevisionSplit (v1 90%, v2 10% at zero, v0 0% at zero with tag prev) on
// real Envoy Gateway: 1,000 requests split 90/10 within ±3 points, v2
// wakes on its share, v0 never wakes until its tag host is asked, a
// percent change re-translates without a failed request, and an invalid
// split answers 500 on its own route while the others serve.
func TestEnvoyGatewayRevisionSplit(t *testing.T) {
	zero := fast(map[string]string{"initial-scale": "0"})
	env := startEGWith(t, egRevisionSplit(90, 10),
		revisionYAML{Name: "hello", Host: "hello.localhost", StartupDelay: 200 * time.Millisecond},
		revisionYAML{Name: "v1", Host: "v1.localhost", Autoscaling: map[string]string{"min-scale": "1"}},
		revisionYAML{Name: "v2", Host: "v2.localhost", StartupDelay: 200 * time.Millisecond, Autoscaling: zero},
		revisionYAML{Name: "v0", Host: "v0.localhost", Autoscaling: zero})
	c := client(60 * time.Second)
	waitGateway(t, c, env, 120*time.Second)
	waitGatewayHost(t, c, env, "shop.localhost", 60*time.Second)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()

	if code, body, _, err := egGet(c, env.gateway+"/", "bad.localhost"); err != nil || code != 500 || !strings.Contains(body, "sum to 90") {
		t.Errorf("invalid split route: %d %q %v, want 500 naming the sum", code, body, err)
	}
	counts := splitRequests(t, c, env, 1000)
	if share := float64(counts["v2"]) / 10; counts["v1"]+counts["v2"] != 1000 || share < 7 || share > 13 {
		t.Errorf("1,000 requests: %v, want v1 and v2 only, v2 at 10%% ± 3", counts)
	}
	if r := statusRow(t, ctx, env.thaw, "local/v0"); num(r, "ready") != 0 || num(r, "desired") > 0 {
		t.Errorf("0%% member after 1,000 requests: %v, want never woken", r)
	}

	// Percent change under load: no failed request, and the new split wins.
	var failed, sent atomic.Int64
	var firstFailure atomic.Value
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < 5000; i++ {
			select {
			case <-stop:
				return
			default:
			}
			code, _, _, err := egGet(c, env.gateway+"/", "shop.localhost")
			sent.Add(1)
			if err != nil || code != 200 {
				failed.Add(1)
				firstFailure.CompareAndSwap(nil, fmt.Sprintf("status %d, error %v", code, err))
			}
		}
	}()
	replaceFile(t, env.res, strings.Replace(readFile(t, env.res), egRevisionSplit(90, 10), egRevisionSplit(50, 50), 1))
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if n := splitRequests(t, c, env, 100); n["v2"] >= 30 {
			break
		}
		time.Sleep(time.Second)
	}
	close(stop)
	wg.Wait()
	if n := splitRequests(t, c, env, 200); n["v2"] < 70 {
		t.Errorf("after 50/50: %v, want v2 near 100 of 200", n)
	}
	if failed.Load() != 0 {
		t.Errorf("%d of %d requests failed during the percent change, the first: %v", failed.Load(), sent.Load(), firstFailure.Load())
	}

	if body := waitGatewayHost(t, c, env, "prev-shop.localhost", 60*time.Second); !strings.Contains(body, "hello from v0") {
		t.Errorf("tag host prev-shop.localhost: %q, want v0", body)
	}
}

// splitRequests sends n requests to shop.localhost and counts answers by
// revision ("hello from <name>"); anything else counts under its status.
func splitRequests(t *testing.T, c *http.Client, env *egEnv, n int) map[string]int {
	t.Helper()
	counts := map[string]int{}
	for range n {
		code, body, _, err := egGet(c, env.gateway+"/", "shop.localhost")
		switch {
		case err != nil:
			counts["error"]++
		case code != 200:
			counts[fmt.Sprint(code)]++
		default:
			// The workload answers "hello from <name>" and more lines
			// (its port, ...): the name is the third word.
			name := body
			if f := strings.Fields(body); len(f) >= 3 && f[0] == "hello" && f[1] == "from" {
				name = f[2]
			}
			counts[name]++
		}
	}
	return counts
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// egRevisionSplit is Revisions v1, v2 and v0 (thaw local's local/<name>),
// the RevisionSplit shop (v1 p1%, v2 p2%, v0 0% with tag prev) behind
// HTTPRoute shop.localhost, and an invalid split (sum 90) behind
// bad.localhost.
func egRevisionSplit(p1, p2 int) string {
	type m = harness.EGSplitMember
	return harness.EGRevision("v1") + harness.EGRevision("v2") + harness.EGRevision("v0") +
		harness.EGSplitRoute("shop", "shop.localhost", m{RevisionName: "v1", Percent: p1}, m{RevisionName: "v2", Percent: p2},
			m{RevisionName: "v0", Percent: 0, Tag: "prev"}) +
		harness.EGSplitRoute("bad", "bad.localhost", m{RevisionName: "v1", Percent: 80}, m{RevisionName: "v2", Percent: 10})
}
