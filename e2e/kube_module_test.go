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

// coldStartBeforeACK wakes a revision at zero (container concurrency cc,
// shared by the two Envoys) with a burst spread over Envoys a and b while
// b's xDS traffic is held back by slow, so b's cluster for the revision
// does not list the new pod. What must hold (docs/activator.md, *Cold
// starts without the endpoint ACK*):
//   - every request of the burst is answered 200 with b's xDS still held
//     back: b's module gets the new backend marked unconfirmed and sends
//     b's share through thaw_activator_dst (b's stats show it), never a
//     strict pin to a host b's cluster does not list (503 "no healthy
//     upstream");
//   - no pod ever has more than cc requests in flight: each Envoy's
//     module takes only its share of the pod's cc, the same before and
//     after its ACK (the burst, 16 on one pod, is over twice cc, so a
//     module taking the whole cc would show).
//
// It then lets b's xDS flow again.
func coldStartBeforeACK(t *testing.T, th *harness.Thaw, runner *harness.PodRunner, a, b *harness.Envoy, slow *pauseProxy, host, want, podPrefix string, cc int64) {
	t.Helper()
	const n = 16
	stat := func(e *harness.Envoy, name string) int64 {
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		v, err := e.Stat(ctx, name)
		if err != nil {
			return 0 // a stat Envoy has not written yet
		}
		return v
	}
	const downstream, viaDst = "http.thaw_http.downstream_rq_total", "cluster.thaw_activator_dst.upstream_rq_total"
	bDown, bDst := stat(b, downstream), stat(b, viaDst)
	slow.Pause()
	defer slow.Resume()
	// A fresh connection per request: the kernel spreads them over the two
	// Envoys sharing the port.
	cl := &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	results := make(chan string, n)
	start := time.Now()
	for range n {
		go func() {
			req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, th.HTTPURL+"/", nil)
			req.Host = host
			resp, err := cl.Do(req)
			if err != nil {
				results <- fmt.Sprintf("error %v", err)
				return
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == 200 && strings.Contains(string(body), want) {
				results <- ""
				return
			}
			results <- fmt.Sprintf("%d %q (%s)", resp.StatusCode, body, resp.Header.Get("x-envoy-response-flags"))
		}()
	}
	var fails []string
	for range n { // bounded by the client's timeout
		if r := <-results; r != "" {
			fails = append(fails, r)
		}
	}
	took := time.Since(start)
	servedB, dstB := stat(b, downstream)-bDown, stat(b, viaDst)-bDst
	if len(fails) > 0 {
		t.Fatalf("with envoy-b's xDS held back, %d of %d requests failed: %v", len(fails), n, fails)
	}
	if servedB < 1 || dstB < 1 {
		t.Fatalf("envoy-b took %d of the burst and sent %d through thaw_activator_dst before its ACK, want at least 1 each", servedB, dstB)
	}
	peak := map[string]int64{}
	for pod, st := range runner.Stats() {
		if strings.HasPrefix(pod, podPrefix) {
			peak[pod] = st.MaxInFlight
			if st.MaxInFlight > cc {
				t.Errorf("pod %s had %d requests in flight, above container concurrency %d shared by 2 Envoys", pod, st.MaxInFlight, cc)
			}
		}
	}
	if len(peak) == 0 {
		t.Fatalf("no pod %s* served the burst", podPrefix)
	}
	t.Logf("cold start: %d of %d answered after %v with envoy-b's xDS held back, envoy-b took %d (%d through thaw_activator_dst); peak in flight per pod %v (cc %d)",
		n, n, took.Round(time.Millisecond), servedB, dstB, peak, cc)
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
