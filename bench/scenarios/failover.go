package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/thaw-dev/thaw/bench/results"
	"github.com/thaw-dev/thaw/xds/translate"
)

// failoverRev stays in proxy mode (target-burst-capacity -1) with two
// ready backends, so every request takes the activator path until thaw
// dies.
var failoverRev = rev{name: "failover", startupDelay: 100 * time.Millisecond, latency: 10 * time.Millisecond,
	autoscaling: map[string]string{"target-burst-capacity": "-1", "min-scale": "2", "max-scale": "2"}}

// Phases of the failover run, from the start of the load.
const (
	failoverKillAt    = 3 * time.Second
	failoverRestartAt = 8 * time.Second
	failoverEnd       = 16 * time.Second
	failoverRate      = 200 // requests per second
)

// runFailover sends a constant proxy-mode load, kills thaw (SIGKILL: its
// Envoy and backends keep running) after failoverKillAt, starts it again
// after failoverRestartAt on the same ports and state, and reports every
// failed request, the latency in each phase, when the route's failover
// retry first reached the backends and when traffic was back on the
// activator.
func runFailover(e *env) (*results.Failover, error) {
	dir, err := e.tempDir("failover")
	if err != nil {
		return nil, err
	}
	first, err := startThaw(e.ctx, e, dir, localConfig(e.workloadBin, failoverRev))
	if err != nil {
		return nil, err
	}
	// After the kill, the first thaw's Envoy and backends belong to the
	// restarted thaw, which stops them; whatever is left of the first
	// process group (a failed restart) is killed here.
	firstPgid := first.Pid()
	defer func() { _ = syscall.Kill(-firstPgid, syscall.SIGKILL) }()
	if err := first.waitStatus(e.ctx, 60*time.Second, "proxy mode with 2 ready backends", func(r revStatus) bool {
		return r.Mode == "proxy" && r.Ready >= 2
	}, failoverRev.name); err != nil {
		_ = first.stop(10 * time.Second)
		return nil, err
	}

	f := &results.Failover{RateRPS: failoverRate, KillAtMs: results.Millis(failoverKillAt),
		RestartAtMs: results.Millis(failoverRestartAt), DirectAfterMs: -1, BackAfterMs: -1,
		Settings: fmt.Sprintf("revision in proxy mode (%s), backends %s per request; %d requests/s for %s; SIGKILL of thaw at %s, restart at %s",
			settingsString(failoverRev.autoscaling), failoverRev.latency, failoverRate, failoverEnd, failoverKillAt, failoverRestartAt)}
	t := newTarget("failover", first.httpURL, failoverRev.host(), 64)
	start := time.Now()
	var (
		mu  sync.Mutex
		res []*vegeta.Result
		wg  sync.WaitGroup
	)
	wg.Go(func() {
		atk := t.attacker(vegeta.Timeout(30 * time.Second))
		for r := range atk.Attack(t.targeter(), vegeta.Rate{Freq: failoverRate, Per: time.Second}, failoverEnd, t.name) {
			mu.Lock()
			res = append(res, r)
			mu.Unlock()
		}
	})

	time.Sleep(time.Until(start.Add(failoverKillAt)))
	directBefore, err := directRequests(e.ctx, first.envoyAdminURL, "rev_local_"+failoverRev.name)
	if err != nil {
		e.logf("failover: %v", err)
	}
	killed := time.Now()
	_ = first.Kill() // thaw alone: its Envoy and backends go on
	<-first.Exited()
	if at, err := waitDirect(e.ctx, first.envoyAdminURL, "rev_local_"+failoverRev.name, directBefore, 10*time.Second); err == nil {
		f.DirectAfterMs = results.Millis(at.Sub(killed))
	} else {
		e.logf("failover: %v", err)
	}

	time.Sleep(time.Until(start.Add(failoverRestartAt)))
	restarted := time.Now()
	restartDir := filepath.Join(dir, "restarted")
	if err := os.MkdirAll(restartDir, 0o755); err != nil {
		wg.Wait()
		return nil, err
	}
	second, err := relaunchThaw(e.ctx, first, restartDir)
	if err != nil {
		wg.Wait()
		return nil, err
	}
	defer e.stopLogged(second.process)
	if at, err := waitActivatorAnswers(e.ctx, second.adminURL, 10*time.Second); err == nil {
		f.BackAfterMs = results.Millis(at.Sub(restarted))
	} else {
		e.logf("failover: %v", err)
	}
	wg.Wait()

	phases := map[string]*sample{"before": {}, "down": {}, "after": {}}
	for _, r := range res {
		at := r.Timestamp
		p := phases["before"]
		switch {
		case at.After(restarted):
			p = phases["after"]
		case at.After(killed):
			p = phases["down"]
		}
		p.add(r)
	}
	f.Before, f.Down, f.After = phases["before"].latency(), phases["down"].latency(), phases["after"].latency()
	for _, p := range phases {
		f.Requests += p.requests
		f.Errors += p.errors
		for k, v := range p.errs {
			if len(f.ErrorSamples) < 10 {
				f.ErrorSamples = append(f.ErrorSamples, fmt.Sprintf("%dx %s", v, strings.TrimSpace(k)))
			}
		}
	}
	e.logf("failover: %d requests, %d failed %v; first retry on the backends %.0f ms after the kill, traffic back on the activator %.0f ms after the restart; p99 before %.1f ms, down %.1f ms, after %.1f ms",
		f.Requests, f.Errors, f.ErrorSamples, f.DirectAfterMs, f.BackAfterMs, f.Before.P99Ms, f.Down.P99Ms, f.After.P99Ms)
	return f, nil
}

// waitDirect polls Envoy's /clusters every 10 ms until the backends of
// cluster have answered more than before requests themselves (the route's
// failover retries: in proxy mode the activator reaches the backends
// through its own cluster), and returns when they had.
func waitDirect(ctx context.Context, envoyAdmin, cluster string, before int64, timeout time.Duration) (time.Time, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for ctx.Err() == nil {
		if n, err := directRequests(ctx, envoyAdmin, cluster); err == nil && n > before {
			return time.Now(), nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	return time.Time{}, fmt.Errorf("no request of %s reached its backends directly within %s", cluster, timeout)
}

// directRequests returns the requests cluster's endpoints other than the
// activator have answered: the sum of their rq_total in Envoy's /clusters.
func directRequests(ctx context.Context, envoyAdmin, cluster string) (int64, error) {
	c := &http.Client{Timeout: time.Second}
	body, err := get(ctx, c, envoyAdmin+"/clusters")
	if err != nil {
		return 0, err
	}
	var n int64
	for _, line := range strings.Split(body, "\n") {
		rest, ok := strings.CutPrefix(line, cluster+"::")
		if !ok {
			continue
		}
		host, stat, ok := strings.Cut(rest, "::rq_total::")
		if !ok || strings.Contains(host, translate.ActivatorListenerName) {
			continue
		}
		if v, err := strconv.ParseInt(stat, 10, 64); err == nil {
			n += v
		}
	}
	return n, nil
}

// waitActivatorAnswers polls thaw's /metrics every 50 ms until
// thaw_extproc_responses_total{outcome="routed"} grows, and returns when
// it did.
func waitActivatorAnswers(ctx context.Context, admin string, timeout time.Duration) (time.Time, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	c := &http.Client{Timeout: time.Second}
	routed := func() string {
		body, err := get(ctx, c, admin+"/metrics")
		if err != nil {
			return ""
		}
		for _, line := range strings.Split(body, "\n") {
			if strings.HasPrefix(line, `thaw_extproc_responses_total{outcome="routed"}`) {
				return line
			}
		}
		return ""
	}
	first := routed()
	for ctx.Err() == nil {
		if now := routed(); now != "" && now != first {
			return time.Now(), nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return time.Time{}, fmt.Errorf("no request routed by the restarted activator within %s", timeout)
}

// get returns the body of a 200 answer to GET url.
func get(ctx context.Context, c *http.Client, url string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := c.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return string(b), nil
}
