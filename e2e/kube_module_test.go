//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/thaw-dev/thaw/e2e/harness"
)

// moduleObject returns bin/thaw-activator.so (make build).
func moduleObject(t *testing.T) string {
	t.Helper()
	so := filepath.Join(harness.RepoRoot(), "bin", "thaw-activator.so")
	if _, err := os.Stat(so); err != nil {
		t.Fatalf("%s missing: run `make build` (%v)", so, err)
	}
	return so
}

// coldStart sends one request to a revision at zero and checks it is held
// while /scale goes to 1 and the pod starts, then served.
func coldStart(t *testing.T, th *harness.Thaw, run *thawRun, host, want string) {
	t.Helper()
	cl := client(60 * time.Second)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	start := time.Now()
	code, body, _, err := get(ctx, cl, th, host, "/")
	cold := time.Since(start)
	if err != nil || code != 200 || !strings.Contains(body, want) {
		t.Fatalf("cold request: code=%d err=%v body=%q\n%s", code, err, body, run.proc.LogTail(40))
	}
	t.Logf("scale from zero: first response after %v (pod startup delay 300ms)", cold)
}

// coldStartPerEnvoyACK wakes a revision at zero with a burst spread over
// Envoys a and b while b's xDS traffic is held back by slow: a's share is
// served (a ACKed the new endpoints, so its module got the backend) while
// b's share stays held in b (b's module must not get a backend b's cluster
// does not list yet: its strict pin would answer 503 "no healthy
// upstream"); once b's xDS flows again, b ACKs and serves its share. No
// request of the burst may fail.
func coldStartPerEnvoyACK(t *testing.T, th *harness.Thaw, a, b *harness.Envoy, slow *pauseProxy, host, want string) {
	t.Helper()
	const n = 16
	slow.Pause()
	resumed := false
	defer func() {
		if !resumed {
			slow.Resume()
		}
	}()
	// A fresh connection per request: the kernel spreads them over the two
	// Envoys sharing the port.
	cl := &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	var done atomic.Int64
	results := make(chan string, n)
	start := time.Now()
	for range n {
		go func() {
			req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, th.HTTPURL+"/", nil)
			req.Host = host
			resp, err := cl.Do(req)
			if err != nil {
				done.Add(1)
				results <- fmt.Sprintf("error %v", err)
				return
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			done.Add(1)
			if resp.StatusCode == 200 && strings.Contains(string(body), want) {
				results <- ""
				return
			}
			results <- fmt.Sprintf("%d %q (%s)", resp.StatusCode, body, resp.Header.Get("x-envoy-response-flags"))
		}()
	}
	active := func(e *harness.Envoy) int64 {
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		v, err := e.Stat(ctx, "http.thaw_http.downstream_rq_active")
		if err != nil {
			return -1
		}
		return v
	}
	var fails []string
	collect := func(k int) {
		for range k {
			if r := <-results; r != "" {
				fails = append(fails, r)
			}
		}
	}
	// Wait (bounded) until every request not held by b has its answer:
	// a served its share with b's xDS still held back.
	var heldB int64
	err := pollFor(t, func() bool {
		heldB = active(b)
		return done.Load() == n || (heldB >= 1 && active(a) == 0 && done.Load()+heldB == n)
	})
	servedByA := done.Load()
	if servedByA == n {
		collect(n)
		t.Fatalf("every request was answered with envoy-b's xDS held back, want envoy-b to hold its share until its ACK; failures: %d %v",
			len(fails), fails)
	}
	if err != nil {
		t.Fatalf("with envoy-b's xDS held back: %d of %d answered, envoy-a active %d, envoy-b active %d (want envoy-a done and envoy-b holding the rest): %v",
			servedByA, n, active(a), heldB, err)
	}
	collect(int(servedByA))
	if len(fails) > 0 {
		t.Fatalf("while envoy-b's xDS was held back, %d of envoy-a's %d answers failed: %v", len(fails), servedByA, fails)
	}
	// Still held a moment later: b's module has not received the backend.
	time.Sleep(500 * time.Millisecond)
	if got := done.Load(); got != servedByA || active(b) != heldB {
		t.Fatalf("envoy-b answered %d requests before its ACK (held %d → %d)", got-servedByA, heldB, active(b))
	}
	t.Logf("cold start: envoy-a served %d of %d after %v while envoy-b held %d with its xDS held back",
		servedByA, n, time.Since(start).Round(time.Millisecond), heldB)
	slow.Resume()
	resumed = true
	resumedAt := time.Now()
	collect(int(heldB))
	if len(fails) > 0 {
		t.Fatalf("envoy-b's held requests after its ACK: %d failed: %v", len(fails), fails)
	}
	t.Logf("envoy-b served its %d held requests %v after its xDS flowed again", heldB, time.Since(resumedAt).Round(time.Millisecond))
}

// waitMetric waits (bounded by pollFor) until thaw's /metrics holds line.
func waitMetric(t *testing.T, adminURL, line string) {
	t.Helper()
	var last string
	err := pollFor(t, func() bool {
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, adminURL+"/metrics", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		last = string(b)
		return strings.Contains(last, line+"\n")
	})
	if err != nil {
		name, _, _ := strings.Cut(line, " ")
		t.Fatalf("/metrics never showed %q: %v\n%s", line, err, grepLines(last, name))
	}
}
