//go:build e2e

package e2e

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/thaw-dev/thaw/e2e/harness"
)

// TestLocalActivatorDefault: `thaw local` without --activator runs the
// activator module when its file and the Envoy can load it, and falls
// back to ext_proc, saying why (log, thaw_activator_info), when they
// cannot; --activator=module asked for and unavailable is an error. Each
// case serves a request to a revision at zero (held, woken, served) on the
// activator it reports; on the module, `thaw status` counts the requests
// the module holds.
func TestLocalActivatorDefault(t *testing.T) {
	// The harness would add THAW_E2E_ACTIVATOR's --activator: this test is
	// about thaw local's own default.
	t.Setenv(harness.ActivatorEnv, "")
	cfg := localConfig(t, revisionYAML{Name: "cold", Host: "cold.test", StartupDelay: 100 * time.Millisecond,
		Autoscaling: fast(map[string]string{"container-concurrency": "2"})},
		revisionYAML{Name: "slow", Host: "slow.test", StartupDelay: 3 * time.Second, Autoscaling: fast(map[string]string{"max-scale": "1"})})
	absent := filepath.Join(t.TempDir(), "absent.so")
	served := func(t *testing.T, th *harness.Thaw) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		code, body, _, err := get(ctx, client(20*time.Second), th, "cold.test", "/")
		if err != nil || code != 200 || !strings.Contains(body, "hello from cold") {
			t.Fatalf("request at zero: code=%d err=%v body=%q", code, err, body)
		}
	}

	t.Run("module by default", func(t *testing.T) {
		th := harness.StartThaw(t, harness.ThawOptions{Config: cfg})
		served(t, th)
		if m := metricsText(t, th); !strings.Contains(m, `thaw_activator_info{activator="module",fallback_reason=""} 1`) {
			t.Errorf("thaw_activator_info does not report the module:\n%s", grepLines(m, "thaw_activator_info"))
		}
		// thaw status counts what the modules hold (their reports, every
		// second): 3 requests held while slow's backend starts (3 s).
		done := make(chan []string, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_, fails := burst(ctx, client(30*time.Second), th, "slow.test", "hello from slow", 3)
			done <- fails
		}()
		row := waitStatus(t, th, "local/slow", 10*time.Second, "requests held in the module", func(r map[string]any) bool {
			return num(r, "held") >= 1
		})
		t.Logf("thaw status while slow starts: held %v, ready %v", row["held"], row["ready"])
		if fails := <-done; len(fails) != 0 {
			t.Errorf("requests held at zero failed: %v", fails)
		}
		if n := extprocAnswers(t, th); n != 0 {
			t.Errorf("ext_proc answered %v requests; the module must have held and routed them", n)
		}
	})

	t.Run("ext_proc when the module file is missing", func(t *testing.T) {
		th := harness.StartThaw(t, harness.ThawOptions{Config: cfg, Args: []string{"--activator-module", absent}})
		served(t, th)
		if m := metricsText(t, th); !strings.Contains(m, `thaw_activator_info{activator="extproc",fallback_reason="module_missing"} 1`) {
			t.Errorf("thaw_activator_info does not report the fallback:\n%s", grepLines(m, "thaw_activator_info"))
		}
		if log := th.Log(); !strings.Contains(log, "falling back to ext_proc") || !strings.Contains(log, "module_missing") {
			t.Errorf("thaw did not log the fallback and its reason:\n%s", lastLines(log, 20))
		}
		if n := extprocAnswers(t, th); n == 0 {
			t.Error("ext_proc answered no request after the fallback")
		}
	})

	t.Run("module asked for and missing is an error", func(t *testing.T) {
		th := harness.StartThaw(t, harness.ThawOptions{Config: cfg, NoWaitReady: true,
			Args: []string{"--activator=module", "--activator-module", absent}})
		waitExit(t, th)
		if log := th.Log(); !strings.Contains(log, "absent.so") || !strings.Contains(log, "make build") {
			t.Fatalf("log does not name the missing module and how to build it:\n%s", lastLines(log, 15))
		}
	})
}
