//go:build e2e

package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/thaw-dev/thaw/e2e/harness"
)

// TestLocalRestartKeepsScale: thaw is killed while a loaded revision runs
// several backends and is started again under the same load. During the
// new thaw's first stable window its averages hold only a few seconds of
// data; the revision's desired scale must not drop below what it was
// before the crash (no revision's scale moves because thaw restarted).
func TestLocalRestartKeepsScale(t *testing.T) {
	cfg := localConfig(t, revisionYAML{
		Name: "keep", Host: "keep.test", StartupDelay: 100 * time.Millisecond, Latency: 50 * time.Millisecond,
		Autoscaling: fast(map[string]string{"target": "5", "target-burst-capacity": "0", "min-scale": "1"}),
	})
	first := harness.StartThaw(t, harness.ThawOptions{Config: cfg})
	load := startLoad(first, "keep.test", "hello from keep", 12)
	row := waitStatus(t, first, "local/keep", 90*time.Second, "several ready backends", func(r map[string]any) bool {
		return r["mode"] == "serve" && num(r, "desired") >= 2 && num(r, "ready") == num(r, "desired")
	})
	before := num(row, "desired")
	first.Kill()
	second := harness.StartThaw(t, harness.ThawOptions{ConfigPath: first.ConfigPath, StateDir: first.StateDir,
		HTTPPort: first.HTTPPort, GRPCPort: first.GRPCPort, AdminPort: first.AdminPort, EnvoyAdminPort: first.EnvoyAdminPort})
	// The revision's first stable window (6 s) starts with the new thaw's
	// first decision; watch most of it.
	waitStatus(t, second, "local/keep", 30*time.Second, "a first decision after the restart", func(r map[string]any) bool {
		return num(r, "desired") >= 0
	})
	lowest, samples := before, 0
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		rows, err := second.Status(ctx)
		cancel()
		if err != nil || rows["local/keep"] == nil {
			continue
		}
		samples++
		lowest = min(lowest, num(rows["local/keep"], "desired"))
	}
	ok, failed, fails := load.stop()
	t.Logf("desired before the crash %v, lowest in the first window after it %v (%d samples); requests %d ok, %d failed",
		before, lowest, samples, ok, failed)
	if samples == 0 {
		t.Fatal("no status read after the restart")
	}
	if lowest < before {
		t.Errorf("desired scale dropped from %v to %v within the first stable window after the restart", before, lowest)
	}
	if failed != 0 {
		t.Errorf("%d requests failed across the restart: %v", failed, fails)
	}
}
