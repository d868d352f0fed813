//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"

	"github.com/thaw-dev/thaw/e2e/harness"
)

// checkStatusFilter asks the real thaw's /status for one revision at a
// time (local/good valid, local/bad invalid), for an unknown one (404) and
// with a malformed name (400), and runs `thaw status <revision>`, which
// prints that row alone.
func checkStatusFilter(ctx context.Context, t *testing.T, th *harness.Thaw) {
	t.Helper()
	get := func(query string) (int, string) {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, th.AdminURL+"/status?"+query, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("/status?%s: %v", query, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, tc := range []struct{ revision, mode string }{{"local/good", ""}, {"local/bad", "invalid"}} {
		code, body := get("revision=" + tc.revision)
		var rows []map[string]any
		if err := json.Unmarshal([]byte(body), &rows); code != 200 || err != nil || len(rows) != 1 ||
			rows[0]["revision"] != tc.revision || (tc.mode != "" && rows[0]["mode"] != tc.mode) {
			t.Errorf("/status?revision=%s = %d %s (%v); want 200 with its one row", tc.revision, code, body, err)
		}
	}
	if code, body := get("revision=local/nope"); code != http.StatusNotFound || !strings.Contains(body, "local/nope not found") {
		t.Errorf("/status?revision=local/nope = %d %q; want 404 naming it", code, body)
	}
	if code, body := get("revision=good"); code != http.StatusBadRequest || !strings.Contains(body, "namespace/name") {
		t.Errorf("/status?revision=good = %d %q; want 400 asking for namespace/name", code, body)
	}
	admin := strings.TrimPrefix(th.AdminURL, "http://")
	out, err := exec.CommandContext(ctx, harness.ThawBinary(t), "status", "--admin-address", admin, "local/good").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "local/good") || strings.Contains(string(out), "local/bad") {
		t.Errorf("thaw status local/good: %v\n%s\nwant the row of local/good alone", err, out)
	}
	out, err = exec.CommandContext(ctx, harness.ThawBinary(t), "status", "--admin-address", admin, "local/nope").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "local/nope not found") {
		t.Errorf("thaw status local/nope: %v\n%s\nwant a failure naming it", err, out)
	}
}
