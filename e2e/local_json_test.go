//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/thaw-dev/thaw/e2e/harness"
)

// TestLocalJSONConfig: a config file written as JSON (read on the JSON
// fast path) starts its revision, which wakes on a request; a JSON edit
// with a key written twice is refused with its line, like YAML's, and
// the last good file keeps serving. thaw's start-up GC is logged, and
// restored at ready when it was raised.
func TestLocalJSONConfig(t *testing.T) {
	entry := func(body string) map[string]any {
		return map[string]any{"name": "j", "hosts": []string{"j.test"},
			"command":   []string{workloadBin(t), "--port", "{port}"},
			"env":       map[string]any{"BODY": body, "STARTUP_DELAY": "0s", "LATENCY": "0s"},
			"readiness": map[string]any{"path": "/healthz", "period": "1s"}, "stopTimeout": "5s",
			"autoscaling": fast(map[string]string{"initial-scale": "0"})}
	}
	doc, err := json.Marshal(map[string]any{"revisions": []any{entry("hello from json")}})
	if err != nil {
		t.Fatal(err)
	}
	path := t.TempDir() + "/thaw.json"
	writeConfig(t, path, string(doc))
	th := harness.StartThaw(t, harness.ThawOptions{ConfigPath: path, Args: []string{"--reload-interval", "200ms"}})
	c := client(30 * time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	if code, body, _, err := get(ctx, c, th, "j.test", "/"); err != nil || code != 200 || !strings.Contains(body, "hello from json") {
		t.Fatalf("JSON-configured revision: code=%d err=%v body=%q", code, err, body)
	}

	// A key twice: "name" on the file's second line.
	dup := strings.Replace(string(doc), `{"revisions":[{`, "{\"revisions\":[{\n\"name\": \"k\",", 1)
	if dup == string(doc) {
		t.Fatalf("test setup: no key added to %s", doc)
	}
	writeConfig(t, path, dup)
	row := waitStatus(t, th, "local/j", 10*time.Second, "duplicate key refused", func(row map[string]any) bool {
		e, _ := row["error"].(string)
		return strings.Contains(e, "config file not applied")
	})
	if e, _ := row["error"].(string); !strings.Contains(e, `line 2: key "name" already set in map`) {
		t.Errorf("status error %q does not name the key written twice and its line", e)
	}
	if code, body, _, err := get(ctx, c, th, "j.test", "/"); err != nil || code != 200 || !strings.Contains(body, "hello from json") {
		t.Fatalf("after the refused edit: code=%d err=%v body=%q", code, err, body)
	}

	log := th.Log()
	if !strings.Contains(log, "config file read as plain JSON, without the YAML parser") {
		t.Errorf("thaw's log does not say the JSON file took the fast path")
	}
	if !strings.Contains(log, "start-up GC") {
		t.Errorf("thaw's log has no start-up GC line")
	}
	if strings.Contains(log, "start-up GC: GOGC raised") && !strings.Contains(log, `"msg":"start-up GC restored","reason":"ready"`) {
		t.Errorf("start-up GC raised but not restored at ready")
	}
}
