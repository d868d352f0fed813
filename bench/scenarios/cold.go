package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/thaw-dev/thaw/bench/results"
)

// runCold measures cold starts: each revision starts at zero (initial-scale
// 0, proxy mode) and gets exactly one request, so every measured request
// wakes its own new backend process. The overhead is the response's end
// minus the moment the backend began listening (its /stats): everything thaw
// and Envoy add on top of the backend's own startup (readiness detection,
// the activator releasing the held request, proxying). One extra revision is
// woken first and not counted, so connection setup between Envoy and the
// activator is not charged to the first sample. name names the run's work
// directory and log lines; extra are more `thaw local` flags
// (--activator=module for the module path).
func runCold(e *env, delays []time.Duration, name string, extra ...string) ([]results.Cold, error) {
	dir, err := e.tempDir(name)
	if err != nil {
		return nil, err
	}
	n := 30
	if e.quick {
		n = 5
	}
	zero := map[string]string{"initial-scale": "0"}
	revs := []rev{{name: "warmup", autoscaling: zero}}
	for di, d := range delays {
		for i := range n {
			revs = append(revs, rev{name: fmt.Sprintf("cold-%d-%d", di, i), startupDelay: d, autoscaling: zero})
		}
	}
	th, err := startThawArgs(e.ctx, e, dir, localConfig(e.workloadBin, revs...), extra...)
	if err != nil {
		return nil, err
	}
	defer e.stopLogged(th.process)
	c := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DisableCompression: true}}
	if _, err := coldOnce(e.ctx, c, th, revs[0]); err != nil {
		return nil, fmt.Errorf("warm-up cold start: %w", err)
	}
	var out []results.Cold
	for di, d := range delays {
		res := results.Cold{StartupDelayMs: results.Millis(d)}
		var overhead, total, spawn []float64
		for i := range n {
			r := revs[1+di*n+i]
			s, err := coldOnce(e.ctx, c, th, r)
			res.N++
			if err != nil {
				res.Errors++
				if len(res.Fails) < 5 {
					res.Fails = append(res.Fails, err.Error())
				}
				continue
			}
			res.Samples = append(res.Samples, s)
			overhead, total, spawn = append(overhead, s.OverheadMs), append(total, s.TotalMs), append(spawn, s.SpawnMs)
		}
		res.OverheadP50Ms, res.OverheadP99Ms = results.Quantile(overhead, 0.5), results.Quantile(overhead, 0.99)
		res.OverheadMaxMs = results.Quantile(overhead, 1)
		res.TotalP50Ms, res.TotalP99Ms = results.Quantile(total, 0.5), results.Quantile(total, 0.99)
		res.SpawnP50Ms = results.Quantile(spawn, 0.5)
		e.logf("%s: startup delay %s: overhead p50 %.1f ms p99 %.1f ms max %.1f ms; total p50 %.1f ms; spawn p50 %.1f ms; %d/%d errors",
			name, d, res.OverheadP50Ms, res.OverheadP99Ms, res.OverheadMaxMs, res.TotalP50Ms, res.SpawnP50Ms, res.Errors, res.N)
		out = append(out, res)
	}
	logFlipToAck(e, th, name)
	return out, nil
}

// coldOnce sends the one request that wakes r and reads the backend's start
// times from its /stats afterwards.
func coldOnce(ctx context.Context, c *http.Client, th *thaw, r rev) (results.ColdSample, error) {
	return coldAt(ctx, c, th.httpURL, r)
}

// coldAt is coldOnce through the Envoy listening at baseURL.
func coldAt(ctx context.Context, c *http.Client, baseURL string, r rev) (results.ColdSample, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, baseURL+"/", nil)
	if err != nil {
		return results.ColdSample{}, err
	}
	req.Host = r.host()
	t0 := time.Now()
	resp, err := c.Do(req)
	if err != nil {
		return results.ColdSample{}, fmt.Errorf("%s: %w", r.name, err)
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	end := time.Now()
	if err != nil || resp.StatusCode != http.StatusOK {
		return results.ColdSample{}, fmt.Errorf("%s: %s %v", r.name, resp.Status, err)
	}
	ws, err := fetchStats(ctx, c, baseURL, r.host())
	if err != nil {
		return results.ColdSample{}, err
	}
	if ws.Requests != 1 {
		return results.ColdSample{}, fmt.Errorf("%s: backend served %d requests, want 1 (not a fresh backend)", r.name, ws.Requests)
	}
	started, listening := time.Unix(0, ws.Started), time.Unix(0, ws.Listening)
	return results.ColdSample{
		TotalMs:    results.Millis(end.Sub(t0)),
		SpawnMs:    results.Millis(started.Sub(t0)),
		StartupMs:  results.Millis(listening.Sub(started)),
		OverheadMs: results.Millis(end.Sub(listening)),
	}, nil
}
