//go:build e2e

package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/thaw-dev/thaw/e2e/harness"
)

// TestLocalReload: thaw local applies edits of its file without a restart.
// Under steady load on revision "keep", an edit adds "added", changes
// "changed" (a warm window opens: min-scale 1 with no request) and
// removes "gone"; keep's process is the same and no request fails. A
// broken edit is reported in `thaw status` and the last good configuration
// keeps serving; removing the window lets "changed" go back to zero.
func TestLocalReload(t *testing.T) {
	keep := revisionYAML{Name: "keep", Host: "keep.test", Autoscaling: fast(map[string]string{"min-scale": "1"})}
	changed := revisionYAML{Name: "changed", Host: "changed.test", Autoscaling: fast(nil)}
	gone := revisionYAML{Name: "gone", Host: "gone.test", Autoscaling: fast(nil)}
	added := revisionYAML{Name: "added", Host: "added.test", Autoscaling: fast(nil)}
	window := "schedule:\n  - {name: always, start: \"* * * * *\", duration: 1m, minScale: 1}\n"

	dir := t.TempDir()
	path := dir + "/thaw.yaml"
	write := func(doc string) { writeConfig(t, path, doc) }
	write("revisions:\n" + wakeRevision(t, keep, "") + wakeRevision(t, changed, "") + wakeRevision(t, gone, ""))
	th := harness.StartThaw(t, harness.ThawOptions{ConfigPath: path, Args: []string{"--reload-interval", "200ms"}})
	c := client(30 * time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()

	waitStatus(t, th, "local/keep", 20*time.Second, "keep ready", func(row map[string]any) bool { return num(row, "ready") == 1 })
	before, err := fetchWorkloadStats(ctx, c, th, "keep.test")
	if err != nil {
		t.Fatal(err)
	}
	load := startLoad(th, "keep.test", "hello from keep", 2)

	write("revisions:\n" + wakeRevision(t, keep, "") + wakeRevision(t, changed, window) + wakeRevision(t, added, ""))
	row := waitStatus(t, th, "local/changed", 20*time.Second, "warm window opened", func(row map[string]any) bool {
		return num(row, "ready") == 1
	})
	if w, _ := row["window"].(string); !strings.HasPrefix(w, "always: min-scale 1 until ") {
		t.Fatalf("status window of changed = %q", w)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		rows, err := th.Status(ctx)
		if err == nil && rows["local/gone"] == nil && rows["local/added"] != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the edit: status %v, want added and not gone", rows)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if code, body, _, err := get(ctx, c, th, "added.test", "/"); err != nil || code != 200 || !strings.Contains(body, "hello from added") {
		t.Fatalf("added revision: code=%d err=%v body=%q", code, err, body)
	}
	if code, _, _, err := get(ctx, c, th, "gone.test", "/"); err != nil || code != 404 {
		t.Fatalf("removed revision: code=%d err=%v, want Envoy's 404", code, err)
	}

	// A broken edit: reported, the last good configuration keeps serving.
	write("revisions:\n  - name: [not a name\n")
	waitStatus(t, th, "local/keep", 10*time.Second, "broken edit reported", func(row map[string]any) bool {
		e, _ := row["error"].(string)
		return strings.Contains(e, "config file not applied")
	})
	if code, body, _, err := get(ctx, c, th, "added.test", "/"); err != nil || code != 200 || !strings.Contains(body, "hello from added") {
		t.Fatalf("added revision after a broken edit: code=%d err=%v body=%q", code, err, body)
	}

	// Fixed, without the window: changed may go back to zero.
	write("revisions:\n" + wakeRevision(t, keep, "") + wakeRevision(t, changed, "") + wakeRevision(t, added, ""))
	waitStatus(t, th, "local/keep", 10*time.Second, "error cleared", func(row map[string]any) bool { return row["error"] == nil })
	waitStatus(t, th, "local/changed", 10*time.Second, "window closed", func(row map[string]any) bool { return row["window"] == nil })
	// The autoscaler never scales on missing data, and a revision woken
	// by a window alone has none: one request gives it some.
	if code, _, _, err := get(ctx, c, th, "changed.test", "/"); err != nil || code != 200 {
		t.Fatalf("changed: code=%d err=%v", code, err)
	}
	waitStatus(t, th, "local/changed", 30*time.Second, "window closed: back to zero", func(row map[string]any) bool {
		return num(row, "ready") == 0
	})

	ok, failed, fails := load.stop()
	if failed > 0 || ok == 0 {
		t.Fatalf("load on keep during the edits: %d ok, %d failed: %v", ok, failed, fails)
	}
	after, err := fetchWorkloadStats(ctx, c, th, "keep.test")
	if err != nil || after.Pid != before.Pid {
		t.Fatalf("keep's process: pid %d before, %d after (%v): an unchanged revision was restarted", before.Pid, after.Pid, err)
	}
	t.Logf("%d requests to keep during the edits, none failed", ok)
}
