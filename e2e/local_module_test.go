//go:build e2e

package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/thaw-dev/thaw/e2e/harness"
)

// moduleArgs are thaw local's arguments for the activator module
// (bin/thaw-activator.so, built by `make build`).
func moduleArgs(t testing.TB) []string {
	t.Helper()
	so := filepath.Join(harness.RepoRoot(), "bin", "thaw-activator.so")
	if _, err := os.Stat(so); err != nil {
		t.Fatalf("%s missing: run `make build` (%v)", so, err)
	}
	return []string{"--activator=module", "--activator-module", so}
}

// TestLocalModuleActivator runs the real thaw binary with
// `--activator=module`: Envoy loads bin/thaw-activator.so, thaw streams it
// state (modsvc) and sends a backend only after Envoy ACKed endpoints
// listing it. A request to a revision at zero is held and served; a burst
// of 600 requests from zero all succeed and no backend ever has more than
// container concurrency (2) requests in flight; past queue-depth a request
// at zero gets 503 with Retry-After at once.
func TestLocalModuleActivator(t *testing.T) {
	th := harness.StartThaw(t, harness.ThawOptions{Args: moduleArgs(t),
		Config: localConfig(t,
			revisionYAML{Name: "mod", Host: "mod.test", StartupDelay: 200 * time.Millisecond, Latency: 100 * time.Millisecond,
				Autoscaling: fast(map[string]string{"container-concurrency": "2", "max-scale": "3", "target": "2", "initial-scale": "0"})},
			revisionYAML{Name: "tiny", Host: "tiny.test", StartupDelay: 3 * time.Second,
				Autoscaling: fast(map[string]string{"container-concurrency": "1", "max-scale": "1", "queue-depth": "2", "hold-timeout": "20s", "initial-scale": "0"})},
			revisionYAML{Name: "s1", Host: "split.test", Traffic: "{percent: 100}",
				Autoscaling: fast(map[string]string{"container-concurrency": "1", "initial-scale": "0"})},
			revisionYAML{Name: "s2", Host: "split.test", Traffic: "{percent: 0, tag: next}",
				Autoscaling: fast(map[string]string{"container-concurrency": "1", "initial-scale": "0"})},
		)})
	c := client(60 * time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()

	for _, rev := range []string{"local/mod", "local/tiny", "local/s1"} {
		waitStatus(t, th, rev, 10*time.Second, "no backend (at zero)", func(r map[string]any) bool { return num(r, "ready") == 0 })
	}

	t.Run("held at zero and served", func(t *testing.T) {
		start := time.Now()
		code, body, _, err := get(ctx, c, th, "mod.test", "/")
		if err != nil || code != 200 || !strings.Contains(body, "hello from mod") {
			t.Fatalf("first request from zero: %d %v %q", code, err, body)
		}
		end := time.Now()
		st, err := fetchWorkloadStats(ctx, c, th, "mod.test")
		if err != nil {
			t.Fatal(err)
		}
		listening := time.Unix(0, st.Listening)
		if listening.Before(start) || listening.After(end) {
			t.Fatalf("backend started listening at %v, outside the request [%v, %v]: not held for a cold start", listening, start, end)
		}
		// The workload itself takes 100 ms (Latency) per request.
		t.Logf("first request from zero served in %v; cold-start overhead (response after the backend listened, less its 100 ms latency) %v",
			end.Sub(start), end.Sub(listening)-100*time.Millisecond)
	})

	t.Run("burst of 600 within container concurrency", func(t *testing.T) {
		start := time.Now()
		ok, fails := burst(ctx, c, th, "mod.test", "hello from mod", 600)
		t.Logf("burst: %d/600 ok in %v", ok, time.Since(start))
		if ok != 600 {
			t.Fatalf("%d of 600 requests failed: %v", 600-ok, fails)
		}
		// /stats is routed (and pinned) by the module too: ask until every
		// ready backend answered, bounded.
		row := waitStatus(t, th, "local/mod", 10*time.Second, "a ready backend", func(r map[string]any) bool { return num(r, "ready") >= 1 })
		seen := map[int]int64{}
		for i := 0; i < 60 && len(seen) < int(num(row, "ready")); i++ {
			st, err := fetchWorkloadStats(ctx, c, th, "mod.test")
			if err != nil {
				t.Fatal(err)
			}
			seen[st.Pid] = st.Max
		}
		if len(seen) == 0 {
			t.Fatal("no backend answered /stats")
		}
		for pid, m := range seen {
			if m > 2 || m < 1 {
				t.Errorf("backend pid %d: max in flight %d; container concurrency is 2", pid, m)
			}
		}
		t.Logf("max in flight per backend (pid: max): %v, %v ready", seen, num(row, "ready"))
	})

	t.Run("overflow at zero gets 503 with Retry-After", func(t *testing.T) {
		type res struct {
			code  int
			retry string
			err   error
		}
		const n = 6
		out := make(chan res, n)
		var wg sync.WaitGroup
		for i := 0; i < n; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				code, _, h, err := get(ctx, c, th, "tiny.test", "/")
				out <- res{code, h.Get("Retry-After"), err}
			}()
		}
		wg.Wait()
		close(out)
		var ok, full int
		for r := range out {
			switch {
			case r.err == nil && r.code == 200:
				ok++
			case r.err == nil && r.code == 503 && r.retry != "":
				full++
			default:
				t.Errorf("request to tiny: %d Retry-After %q err %v; want 200 or 503 with Retry-After", r.code, r.retry, r.err)
			}
		}
		// queue depth 2 at zero: 2 held then served, 4 refused at once.
		if ok != 2 || full != n-2 {
			t.Fatalf("%d served, %d refused; want 2 served (queue depth) and %d refused", ok, full, n-2)
		}
	})

	// A split route names each weighted cluster's revision: a request to
	// a split host at zero is held by the module (without the per-cluster
	// configuration it would reach an empty cluster: 503).
	t.Run("split host held at zero and served", func(t *testing.T) {
		code, body, _, err := get(ctx, c, th, "split.test", "/")
		if err != nil || code != 200 || !strings.Contains(body, "hello from s1") {
			t.Fatalf("split host from zero: %d %v %q", code, err, body)
		}
	})

	t.Run("module path: Envoy loaded it, ext_proc unused", func(t *testing.T) {
		if n := extprocAnswers(t, th); n != 0 {
			t.Errorf("thaw's ext_proc answered %v requests; with the module it must see none", n)
		}
		for i := 0; ; i++ {
			logb, _ := os.ReadFile(filepath.Join(th.StateDir, "envoy.log"))
			if strings.Contains(string(logb), "Dynamic module ABI version v0.2.0 matched") {
				break
			}
			if i == 100 {
				t.Fatal("thaw's Envoy never logged a matching dynamic-module ABI version (v0.2.0)")
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
}
