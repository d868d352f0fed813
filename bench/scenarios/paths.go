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
// (every request goes through the activator over ext_proc), and the
// activator module's sides from a second thaw (paths_module.go). Rounds
// are interleaved, rotating the order, so background load hits all sides
// alike.
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
	sl, err := startStaticEnvoyLimit(e, dir, ws.Port)
	if err != nil {
		return nil, err
	}
	defer e.stopLogged(sl.process)
	const maxConns = 256
	ms, err := startModuleSides(e, maxConns)
	if err != nil {
		return nil, err
	}
	defer e.stopLogged(ms.th.process)

	p := &results.Paths{RateRPS: e.rate, Rounds: 20, RoundSeconds: 2, Concurrency: 16, ThroughputRounds: 10, ThroughputSeconds: 2}
	if e.quick {
		p.Rounds, p.RoundSeconds, p.ThroughputRounds, p.ThroughputSeconds = 2, 1, 1, 1
	}
	static := newTarget("static", se.httpURL, serveRev.host(), maxConns)
	serve := newTarget("serve", th.httpURL, serveRev.host(), maxConns)
	proxy := newTarget("proxy", th.httpURL, proxyRev.host(), maxConns)
	// A pair is measured interleaved (one attack alternating between the
	// sides, each at the full rate) or back to back (each side alone at the
	// full rate, order alternating by round).
	type pair struct {
		a, b        *target
		sa, sb      *results.Side
		pa, pb      sample
		interleaved bool
	}
	p.Static.Name, p.Serve.Name, p.ServeWithProxy.Name, p.Proxy.Name = "static", "serve", "serve", "proxy"
	p.Static.Description = "plain Envoy, static config, routing to the serve revision's backend process"
	p.Serve.Description = "thaw serve mode: Envoy routes straight to the backend (alongside static)"
	p.ServeWithProxy.Description = "thaw serve mode (back to back with proxy)"
	p.Proxy.Description = "thaw proxy mode (target-burst-capacity -1): every request through the activator (ext_proc), warm backend"
	newModuleResults(p)
	newLimitResult(p)
	pairs := []*pair{
		{a: static, b: serve, sa: &p.Static, sb: &p.Serve, interleaved: true},
		{a: serve, b: proxy, sa: &p.ServeWithProxy, sb: &p.Proxy},
		{a: serve, b: ms.cc0, sa: p.ServeWithModule, sb: p.Module},
	}
	round := time.Duration(p.RoundSeconds * float64(time.Second))
	e.logf("paths: warm-up, then %d rounds: static+serve interleaved, serve and proxy, serve and module back to back; %s per side, %d rps per side",
		p.Rounds, round, p.RateRPS)
	for _, pr := range pairs {
		pairedRate(pr.a, pr.b, p.RateRPS, time.Second, nil, nil)
	}
	for r := range p.Rounds {
		for i := range pairs {
			pr := pairs[(i+r)%len(pairs)]
			var ra, rb sample
			switch {
			case pr.interleaved:
				pairedRate(pr.a, pr.b, p.RateRPS, round, &ra, &rb)
			case r%2 == 0:
				constantRate(pr.a, p.RateRPS, round, &ra)
				constantRate(pr.b, p.RateRPS, round, &rb)
			default:
				constantRate(pr.b, p.RateRPS, round, &rb)
				constantRate(pr.a, p.RateRPS, round, &ra)
			}
			la, lb := ra.latency(), rb.latency()
			e.logf("paths: round %d %s p50 %.3f p99 %.3f ms | %s p50 %.3f p99 %.3f ms (%d+%d requests, %d+%d errors)",
				r+1, pr.a.name, la.P50Ms, la.P99Ms, pr.b.name, lb.P50Ms, lb.P99Ms, la.Requests, lb.Requests, la.Errors, lb.Errors)
			pr.pa.merge(&ra)
			pr.pb.merge(&rb)
			pr.sa.RoundP50Ms, pr.sa.RoundP99Ms = append(pr.sa.RoundP50Ms, la.P50Ms), append(pr.sa.RoundP99Ms, la.P99Ms)
			pr.sb.RoundP50Ms, pr.sb.RoundP99Ms = append(pr.sb.RoundP50Ms, lb.P50Ms), append(pr.sb.RoundP99Ms, lb.P99Ms)
		}
		if err := e.ctx.Err(); err != nil {
			return nil, err
		}
	}
	for _, pr := range pairs {
		pr.sa.Latency, pr.sb.Latency = pr.pa.latency(), pr.pb.latency()
		if len(pr.pa.errs)+len(pr.pb.errs) > 0 {
			e.logf("paths: errors %s %v, %s %v", pr.a.name, pr.pa.errs, pr.b.name, pr.pb.errs)
		}
	}

	// Throughput: closed loop per side, the sides back to back, order
	// rotating; serve's figures go to both of its entries.
	// CPU per request: thaw's process and the Envoy serving the side, from
	// /proc, summed over the closed-loop rounds.
	thawEnvoy, err := childNamed(th.Pid(), "envoy")
	if err != nil {
		return nil, err
	}
	sides := []struct {
		t           *target
		thaw, envoy int
		out         []*results.Side
		cpu         [2]time.Duration
		n           float64
	}{{t: static, thaw: th.Pid(), envoy: se.Pid(), out: []*results.Side{&p.Static}},
		{t: serve, thaw: th.Pid(), envoy: thawEnvoy, out: []*results.Side{&p.Serve, &p.ServeWithProxy, p.ServeWithModule}},
		{t: proxy, thaw: th.Pid(), envoy: thawEnvoy, out: []*results.Side{&p.Proxy}},
		{t: ms.cc0, thaw: ms.th.Pid(), envoy: ms.envoy, out: []*results.Side{p.Module}},
		{t: ms.cc4, thaw: ms.th.Pid(), envoy: ms.envoy, out: []*results.Side{p.ModuleCC4}},
		{t: newTarget("limit4", sl.httpURL, serveRev.host(), maxConns), thaw: th.Pid(), envoy: sl.Pid(), out: []*results.Side{p.StaticLimit4}}}
	tdur := time.Duration(p.ThroughputSeconds * float64(time.Second))
	for r := range p.ThroughputRounds {
		for i := range sides {
			sd := &sides[(i+r)%len(sides)]
			m := startCPU(sd.thaw, sd.envoy)
			rps, errs := closedLoop(sd.t, p.Concurrency, tdur)
			used := m.stop()
			sd.cpu[0] += used[0]
			sd.cpu[1] += used[1]
			sd.n += rps * tdur.Seconds()
			e.logf("paths: throughput round %d %-6s %.0f req/s (%d errors), CPU thaw %v envoy %v", r+1, sd.t.name, rps, errs, used[0], used[1])
			for _, o := range sd.out {
				if rps > 0 {
					o.RoundEnvoyCPUUs = append(o.RoundEnvoyCPUUs, float64(used[1].Microseconds())/(rps*tdur.Seconds()))
				}
				o.ThroughputRPS += rps / float64(p.ThroughputRounds)
				o.ThroughputErrors += errs
				o.RoundThroughput = append(o.RoundThroughput, rps)
			}
		}
	}
	for _, sd := range sides {
		if sd.n == 0 {
			continue
		}
		for _, o := range sd.out {
			o.ThawCPUUsPerRequest = float64(sd.cpu[0].Microseconds()) / sd.n
			o.EnvoyCPUUsPerRequest = float64(sd.cpu[1].Microseconds()) / sd.n
			o.CPURequests = int64(sd.n)
		}
	}
	// The proxy side must really have gone through the activator: its
	// revision stays in proxy mode.
	if err := th.waitStatus(e.ctx, 5*time.Second, "proxy still in proxy mode", func(r revStatus) bool {
		return r.Mode == "proxy"
	}, proxyRev.name); err != nil {
		return nil, err
	}
	if err := ms.check(e.ctx); err != nil {
		return nil, err
	}
	for _, s := range []*results.Side{&p.Static, &p.Serve, &p.ServeWithProxy, &p.Proxy, p.ServeWithModule, p.Module} {
		e.logf("paths: %-6s p50 %.3f ms p99 %.3f ms, %d/%d errors, %.0f rps sent; closed loop %.0f rps (%d errors)",
			s.Name, s.Latency.P50Ms, s.Latency.P99Ms, s.Latency.Errors, s.Latency.Requests,
			s.Latency.RateRPS, s.ThroughputRPS, s.ThroughputErrors)
		if s.Latency.Requests == 0 {
			return p, fmt.Errorf("side %s sent no requests", s.Name)
		}
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
