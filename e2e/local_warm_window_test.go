//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/thaw-dev/thaw/e2e/harness"
)

// TestLocalWarmWindowWakesDormant: with real Envoy and thaw local, a
// revision at zero whose warm window opens at the next minute (25-85 s
// away) is dormant until then (thaw_autoscaler_revisions_dormant 1: it
// sleeps until its policy's next change instead of ticking), and gets its
// replica when the window opens, without a request.
func TestLocalWarmWindowWakesDormant(t *testing.T) {
	now := time.Now().UTC()
	opens := now.Truncate(time.Minute).Add(time.Minute)
	if opens.Sub(now) < 25*time.Second { // room for thaw's start on a loaded machine
		opens = opens.Add(time.Minute)
	}
	window := fmt.Sprintf("schedule:\n  - {name: soon, start: \"%d %d * * *\", duration: 1m, minScale: 1}\n",
		opens.Minute(), opens.Hour())
	r := revisionYAML{Name: "warm", Host: "warm.test", Autoscaling: fast(nil)}
	path := t.TempDir() + "/thaw.yaml"
	writeConfig(t, path, "revisions:\n"+wakeRevision(t, r, window))
	th := harness.StartThaw(t, harness.ThawOptions{ConfigPath: path})

	for metricValue(t, th, "thaw_autoscaler_revisions_dormant") != 1 {
		if time.Until(opens) < 2*time.Second {
			t.Fatalf("not dormant before its window opens at %v", opens)
		}
		time.Sleep(200 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rows, err := th.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if row := rows["local/warm"]; row == nil || num(row, "ready") != 0 || row["window"] != nil {
		t.Fatalf("status before the window opens = %v, want ready 0 and no window", row)
	}
	t.Logf("dormant at zero %.0f s before its window opens", time.Until(opens).Seconds())

	row := waitStatus(t, th, "local/warm", time.Until(opens)+20*time.Second, "window opened", func(row map[string]any) bool {
		return num(row, "ready") == 1
	})
	if time.Now().Before(opens) {
		t.Fatalf("ready at %v, before its window opens at %v", time.Now(), opens)
	}
	if w, _ := row["window"].(string); !strings.HasPrefix(w, "soon: min-scale 1 until ") {
		t.Fatalf("status window = %q, want soon's", w)
	}
	if got := metricValue(t, th, "thaw_autoscaler_revisions_dormant"); got != 0 {
		t.Errorf("thaw_autoscaler_revisions_dormant = %v with the window open, want 0", got)
	}
}
