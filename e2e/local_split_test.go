//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/thaw-dev/thaw/e2e/harness"
)

// TestLocalTrafficSplit: four revisions share shop.test at 90/10/0/0
// through real Envoy. Of 1000 requests, the 10% revision (started at zero,
// so it wakes on its share) answers 10% ± 4% (a binomial bound of over 4
// standard deviations), the 90% one the rest, the 0% ones none: the one
// started at zero stays there, even though every request carries a
// client-sent x-thaw-revision naming it (Envoy replaces it per weighted
// cluster), and the one woken through its tag host scales back to zero.
// Every request succeeds. A tag host reaches only its revision. A split
// whose percents sum to 90 is reported (status, log, metric) and its host
// answers 404 while the valid split keeps serving.
func TestLocalTrafficSplit(t *testing.T) {
	atZero := fast(map[string]string{"initial-scale": "0"})
	th := harness.StartThaw(t, harness.ThawOptions{Config: localConfig(t,
		revisionYAML{Name: "v1", Host: "shop.test", Traffic: "{percent: 90}", Autoscaling: fast(nil)},
		revisionYAML{Name: "v2", Host: "shop.test", Traffic: "{percent: 10, tag: canary}", StartupDelay: 100 * time.Millisecond, Autoscaling: atZero},
		revisionYAML{Name: "v3", Host: "shop.test", Traffic: "{percent: 0, tag: zero}", Autoscaling: atZero},
		revisionYAML{Name: "v4", Host: "shop.test", Traffic: "{percent: 0, tag: old}", Autoscaling: fast(nil)},
		revisionYAML{Name: "bad1", Host: "bad.test", Traffic: "{percent: 50}", Autoscaling: atZero},
		revisionYAML{Name: "bad2", Host: "bad.test", Traffic: "{percent: 40}", Autoscaling: atZero},
	)})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	c := client(30 * time.Second)
	// The 0% revision v4 gets a backend through its tag host.
	if code, body, _, err := get(ctx, c, th, "old-shop.test", "/"); err != nil || code != 200 || !strings.Contains(body, "hello from v4") {
		t.Fatalf("tag host old-shop.test: code=%d err=%v body=%q, want v4's answer", code, err, body)
	}
	rows, err := th.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []string{"local/v2", "local/v3"} {
		if num(rows[r], "ready") != 0 {
			t.Fatalf("%s before the load: %v, want no backend (at zero)", r, rows[r])
		}
	}

	counts, failed, fails := splitLoad(ctx, th, "shop.test", 1000, 20)
	t.Logf("1000 requests to shop.test: %v, %d failed", counts, failed)
	if failed > 0 {
		t.Fatalf("%d of 1000 requests failed, first: %v", failed, fails)
	}
	if counts["v3"] != 0 || counts["v4"] != 0 || counts["v1"]+counts["v2"] != 1000 {
		t.Errorf("answers by revision = %v, want only v1 and v2", counts)
	}
	if v2 := counts["v2"]; v2 < 60 || v2 > 140 {
		t.Errorf("the 10%% revision answered %d of 1000, want 100 ± 40", v2)
	}
	waitStatus(t, th, "local/v2", 10*time.Second, "a ready backend (woken by its share)", func(r map[string]any) bool {
		return num(r, "ready") >= 1
	})

	for i := range 20 {
		code, body, _, err := get(ctx, c, th, "canary-shop.test", "/")
		if err != nil || code != 200 || !strings.Contains(body, "hello from v2") {
			t.Fatalf("tag host request %d: code=%d err=%v body=%q, want v2's answer", i, code, err, body)
		}
	}

	code, _, _, err := get(ctx, c, th, "bad.test", "/")
	if err != nil || code != 404 {
		t.Errorf("bad.test (invalid split): code=%d err=%v, want 404", code, err)
	}
	rows, err = th.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []string{"local/bad1", "local/bad2"} {
		if e := fmt.Sprint(rows[r]["error"]); !strings.Contains(e, "not routed") || !strings.Contains(e, "sum to 90") {
			t.Errorf("%s status error = %q, want the invalid split reported", r, e)
		}
	}
	if e := rows["local/v1"]["error"]; e != nil && e != "" {
		t.Errorf("v1 status error = %v, want none", e)
	}
	if !strings.Contains(th.Log(), `traffic split of host \"bad.test\"`) {
		t.Errorf("thaw log does not report the invalid split of bad.test")
	}
	if m, err := adminGet(ctx, th.AdminURL+"/metrics"); err != nil || !strings.Contains(m, "thaw_xds_skipped_revisions 2\n") {
		t.Errorf("metrics: err %v; want thaw_xds_skipped_revisions 2, got %q", err, grepLines(m, "thaw_xds_skipped_revisions"))
	}
	// The 0% revision started at zero got no request: still no backend.
	if r := statusRow(t, ctx, th, "local/v3"); num(r, "ready") != 0 || num(r, "desired") > 0 {
		t.Errorf("0%% revision after the load: %v, want no backend and desired <= 0", r)
	}
	// The 0% revision woken through its tag host scales back to zero.
	start := time.Now()
	waitStatus(t, th, "local/v4", 40*time.Second, "scaled to zero", func(r map[string]any) bool {
		return r["mode"] == "proxy" && num(r, "ready") == 0 && num(r, "desired") == 0
	})
	t.Logf("the 0%% revision woken through its tag host scaled to zero %v after the load", time.Since(start).Round(time.Second))
}

// splitLoad sends n GET / to host from conc workers (tallyByBackend)
// and counts the answers by the revision named in the body ("hello from
// <name>"). Every request carries a client-sent x-thaw-revision naming
// local/v3, which Envoy must replace.
func splitLoad(ctx context.Context, th *harness.Thaw, host string, n, conc int) (counts map[string]int, failed int, fails []string) {
	return tallyByBackend(ctx, th, host, n, conc, func(body string) string {
		name, ok := strings.CutPrefix(body, "hello from ")
		if !ok {
			return ""
		}
		name, _, _ = strings.Cut(name, "\n")
		return name
	})
}

func statusRow(t *testing.T, ctx context.Context, th *harness.Thaw, rev string) map[string]any {
	t.Helper()
	rows, err := th.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return rows[rev]
}

// adminGet returns the body of a GET on thaw's admin server.
func adminGet(ctx context.Context, url string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}
