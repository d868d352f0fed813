package main

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/thaw-dev/thaw/bench/results"
)

// runPaths measures the request path three ways against backends of the
// same binary: a plain Envoy with a static config routing to the serve
// revision's own backend process (baseline), thaw's serve mode (Envoy
// routes straight to the backend) and thaw's proxy mode with a warm backend
// (every request goes through the activator over ext_proc). Rounds are
// interleaved, rotating the order, so background load hits all sides alike.
func runPaths(e *env) (*results.Paths, error) {
	dir, err := e.tempDir("paths")
	if err != nil {
		return nil, err
	}
	one := map[string]string{"min-scale": "1", "max-scale": "1", "initial-scale": "1"}
	serveRev := rev{name: "serve", autoscaling: with(one, "target-burst-capacity", "0")}
	proxyRev := rev{name: "proxy", autoscaling: with(one, "target-burst-capacity", "-1")}
	th, err := startThaw(e.ctx, e, dir, localConfig(e.workloadBin, serveRev, proxyRev))
	if err != nil {
		return nil, err
	}
	defer e.stopLogged(th.process)
	if err := th.waitStatus(e.ctx, 30*time.Second, "serve mode, 1 ready", func(r revStatus) bool {
		return r.Mode == "serve" && r.Ready == 1
	}, serveRev.name); err != nil {
		return nil, err
	}
	if err := th.waitStatus(e.ctx, 30*time.Second, "proxy mode, 1 ready", func(r revStatus) bool {
		return r.Mode == "proxy" && r.Ready == 1
	}, proxyRev.name); err != nil {
		return nil, err
	}
	c := &http.Client{Timeout: 5 * time.Second}
	ctx, cancel := context.WithTimeout(e.ctx, 10*time.Second)
	defer cancel()
	ws, err := fetchStats(ctx, c, th.httpURL, serveRev.host())
	if err != nil {
		return nil, err
	}
	se, err := startStaticEnvoy(e, dir, ws.Port)
	if err != nil {
		return nil, err
	}
	defer e.stopLogged(se.process)

	p := &results.Paths{RateRPS: e.rate, Rounds: 10, RoundSeconds: 2, Concurrency: 16, ThroughputRounds: 5, ThroughputSeconds: 2}
	if e.quick {
		p.Rounds, p.RoundSeconds, p.ThroughputRounds, p.ThroughputSeconds = 2, 1, 1, 1
	}
	const maxConns = 256
	sides := []*target{
		newTarget("static", se.httpURL, serveRev.host(), maxConns),
		newTarget("serve", th.httpURL, serveRev.host(), maxConns),
		newTarget("proxy", th.httpURL, proxyRev.host(), maxConns),
	}
	round := time.Duration(p.RoundSeconds * float64(time.Second))
	e.logf("paths: warm-up, then %d rounds x %s at %d rps per side, interleaved", p.Rounds, round, p.RateRPS)
	for _, t := range sides {
		constantRate(t, p.RateRPS, time.Second, nil)
	}
	samples := make([]sample, len(sides))
	out := make([]results.Side, len(sides))
	for r := range p.Rounds {
		for i := range sides {
			j := (i + r) % len(sides)
			var rs sample
			constantRate(sides[j], p.RateRPS, round, &rs)
			l := rs.latency()
			e.logf("paths: round %d %-6s p50 %.3f ms p99 %.3f ms max %.1f ms (%d requests, %d errors)",
				r+1, sides[j].name, l.P50Ms, l.P99Ms, l.MaxMs, l.Requests, l.Errors)
			samples[j].merge(&rs)
			out[j].RoundP50Ms = append(out[j].RoundP50Ms, l.P50Ms)
			out[j].RoundP99Ms = append(out[j].RoundP99Ms, l.P99Ms)
		}
		if err := e.ctx.Err(); err != nil {
			return nil, err
		}
	}
	tput := make([]float64, len(sides))
	terrs := make([]int, len(sides))
	tdur := time.Duration(p.ThroughputSeconds * float64(time.Second))
	for r := range p.ThroughputRounds {
		for i := range sides {
			j := (i + r) % len(sides)
			rps, errs := closedLoop(sides[j], p.Concurrency, tdur)
			e.logf("paths: throughput round %d %-6s %.0f req/s (%d errors)", r+1, sides[j].name, rps, errs)
			tput[j] += rps / float64(p.ThroughputRounds)
			terrs[j] += errs
			out[j].RoundThroughput = append(out[j].RoundThroughput, rps)
		}
	}
	// The proxy side must really have gone through the activator: its
	// revision stays in proxy mode.
	if err := th.waitStatus(e.ctx, 5*time.Second, "proxy still in proxy mode", func(r revStatus) bool {
		return r.Mode == "proxy"
	}, proxyRev.name); err != nil {
		return nil, err
	}
	desc := []string{
		"plain Envoy, static config, routing to the serve revision's backend process",
		"thaw serve mode: Envoy routes straight to the backend",
		"thaw proxy mode (target-burst-capacity -1): every request through the activator (ext_proc), warm backend",
	}
	for i, t := range sides {
		out[i].Name, out[i].Description, out[i].Latency = t.name, desc[i], samples[i].latency()
		out[i].ThroughputRPS, out[i].ThroughputErrors = tput[i], terrs[i]
		e.logf("paths: %-6s p50 %.3f ms p99 %.3f ms, %d/%d errors, %.0f rps sent; closed loop %.0f rps (%d errors) %v",
			t.name, out[i].Latency.P50Ms, out[i].Latency.P99Ms, out[i].Latency.Errors, out[i].Latency.Requests,
			out[i].Latency.RateRPS, tput[i], terrs[i], samples[i].errs)
	}
	p.Static, p.Serve, p.Proxy = out[0], out[1], out[2]
	if p.Static.Latency.Requests == 0 || p.Serve.Latency.Requests == 0 || p.Proxy.Latency.Requests == 0 {
		return p, fmt.Errorf("a side sent no requests")
	}
	return p, nil
}

// with returns a copy of m with k set to v.
func with(m map[string]string, k, v string) map[string]string {
	out := make(map[string]string, len(m)+1)
	for mk, mv := range m {
		out[mk] = mv
	}
	out[k] = v
	return out
}
