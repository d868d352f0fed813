package main

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/thaw-dev/thaw/bench/peers"
	"github.com/thaw-dev/thaw/bench/results"
)

// peersConfig is where the peers scenario finds the peer binaries
// (`make tools-peers` links them into .tools/bin).
type peersConfig struct {
	kedaBin, queueBin string
	// smoke: start everything, send one request through each side, measure
	// nothing (CI).
	smoke bool
}

// runPeers compares thaw with its peers on one backend binary, in the
// network namespace runPeersMain put it in:
//
//	static        plain Envoy (static config) → backend: the baseline
//	proxy         thaw local, ext_proc: proxy mode (every request through
//	              the ext_proc activator, target-burst-capacity -1)
//	serve, module a second thaw local whose Envoy loads the activator
//	              module (the fleet default): serve mode, and every
//	              request through the module (cc 0, target-burst-capacity
//	              -1), no RPC per request
//	envoy+qp      plain Envoy → Knative queue-proxy → backend
//	envoy+keda    plain Envoy → KEDA HTTP add-on interceptor → backend
//	qp, keda      each peer alone → backend
//	direct        the backend itself
//
// The plain Envoy is one process for static, envoy+qp and envoy+keda (one
// virtual host each); static, the peers and direct share the serve
// revision's backend process (in the ext_proc thaw), proxy mode, the
// module's serve and module revisions each use their own backend (the
// same binary). A peer that cannot be found or started is recorded
// (Peer.Error, the sides' Failed, res.Errors) and the rest still runs; the
// error returned is what stopped the whole scenario.
func runPeers(e *env, pc peersConfig) (*results.Peers, error) {
	res := &results.Peers{Started: time.Now(), Quick: e.quick, Smoke: pc.smoke, Load1Start: load1(),
		RateRPS: e.rate, Rounds: 20, RoundSeconds: 2, Concurrency: 16, ThroughputRounds: 10, ThroughputSeconds: 2}
	if e.quick {
		res.Rounds, res.RoundSeconds, res.ThroughputRounds, res.ThroughputSeconds = 3, 1, 1, 1
	}
	dir, err := e.tempDir("peers")
	if err != nil {
		return res, err
	}
	fail := func(err error) {
		e.logf("peers: %v", err)
		res.Errors = append(res.Errors, err.Error())
	}

	// thaw, as in the paths scenario.
	one := map[string]string{"min-scale": "1", "max-scale": "1", "initial-scale": "1"}
	serveRev := rev{name: "serve", autoscaling: with(one, "target-burst-capacity", "0")}
	proxyRev := rev{name: "proxy", autoscaling: with(one, "target-burst-capacity", "-1")}
	nCold := 10
	if e.quick {
		nCold = 3
	}
	if pc.smoke {
		nCold = 0
	}
	colds := coldRevs(nCold)
	thawCfg := localConfig(e.workloadBin, append([]rev{serveRev, proxyRev}, colds...)...)
	th, err := startThaw(e.ctx, e, dir, thawCfg)
	if err != nil {
		return res, err
	}
	defer e.stopLogged(th.process)
	for _, w := range []struct {
		r    rev
		mode string
	}{{serveRev, "serve"}, {proxyRev, "proxy"}} {
		if err := th.waitStatus(e.ctx, 60*time.Second, w.mode+" mode, 1 ready", func(r revStatus) bool {
			return r.Mode == w.mode && r.Ready == 1
		}, w.r.name); err != nil {
			return res, err
		}
	}
	ctx, cancel := context.WithTimeout(e.ctx, 10*time.Second)
	ws, err := fetchStats(ctx, &http.Client{Timeout: 5 * time.Second}, th.httpURL, serveRev.host())
	cancel()
	if err != nil {
		return res, err
	}
	thawEnvoy, err := childNamed(th.Pid(), "envoy")
	if err != nil {
		return res, err
	}
	res.Peers = append(res.Peers,
		results.Peer{Name: "thaw", Version: peers.ThawVersion(e.thawBin),
			Command: "thaw local -f thaw.yaml --envoy-concurrency " + fmt.Sprint(e.envoyWorkers), Config: thawCfg},
		results.Peer{Name: "Envoy", Version: peers.EnvoyVersion(e.envoyBin),
			Command: fmt.Sprintf("envoy -c front.yaml --disable-hot-restart --concurrency %d", e.envoyWorkers)})

	// The peers.
	ports, err := pickPorts(4)
	if err != nil {
		return res, err
	}
	qpPort, qpTLSPort, kedaPort, kedaAdmin := ports[0], ports[1], ports[2], ports[3]
	qp := results.Peer{Name: "Knative queue-proxy", Version: "knative.dev/serving " + peers.BinVersion(pc.queueBin, "queue-proxy"),
		Command: "queue-proxy (configured by its environment)"}
	var qpProc *process
	if err := peers.CheckBinary(pc.queueBin); err != nil {
		qp.Error = err.Error()
	} else if p, env, err := startQueueProxy(e, dir, pc.queueBin, qpPort, qpTLSPort, ws.Port); err != nil {
		qp.Error = err.Error()
	} else {
		qpProc, qp.Config = p, envLines(env)
		// queue-proxy drains for 30 s after SIGTERM, as in a pod: no
		// request is in flight by then, so it gets a short grace.
		defer func() { _ = p.stop(time.Second) }()
	}
	keda := results.Peer{Name: "KEDA HTTP add-on interceptor", Version: "github.com/kedacore/http-add-on " + peers.BinVersion(pc.kedaBin, "keda-interceptor")}
	var kedaProc *process
	var api *peers.KedaAPI
	if err := peers.CheckBinary(pc.kedaBin); err != nil {
		keda.Error = err.Error()
	} else if api, err = peers.StartKedaAPI(e.ctx, dir, ws.Port); err != nil {
		keda.Error = err.Error()
	} else {
		defer func() {
			if err := api.Stop(); err != nil {
				e.logf("peers: stop api server: %v", err)
			}
		}()
		p, cmd, env, err := startInterceptor(e, dir, pc.kedaBin, kedaPort, kedaAdmin, api.Kubeconfig)
		if err != nil {
			keda.Error = err.Error()
		} else {
			kedaProc, keda.Command, keda.Config = p, cmd, envLines(env)
			defer e.stopLogged(p)
		}
	}
	for _, p := range []results.Peer{qp, keda} {
		if p.Error != "" {
			fail(fmt.Errorf("%s: %s", p.Name, p.Error))
		}
	}
	res.Peers = append(res.Peers, qp, keda)

	routes := []frontRoute{{host: "static.bench", cluster: "backend", port: ws.Port}}
	if qpProc != nil {
		routes = append(routes, frontRoute{host: "qp.bench", cluster: "queue_proxy", port: qpPort})
	}
	if kedaProc != nil {
		routes = append(routes, frontRoute{host: peers.KedaHost, cluster: "keda_interceptor", port: kedaPort})
	}
	front, err := startEnvoy(e, dir, "front envoy", "front", frontBootstrap(routes))
	if err != nil {
		return res, err
	}
	defer e.stopLogged(front.process)
	res.Peers[1].Config = frontBootstrap(routes)

	const maxConns = 256
	envoyPid, thawPid := namedPid{"Envoy", front.Pid()}, namedPid{"thaw", th.Pid()}
	thawEnvoyPid := namedPid{"Envoy", thawEnvoy}
	frontURL := front.url("peers_http")
	sides := []*peerSide{
		{name: "static", description: "plain Envoy (static config) → backend: the baseline",
			t: newTarget("static", frontURL, "static.bench", maxConns), procs: []namedPid{envoyPid}},
		{name: "thaw serve", description: "thaw serve mode (the ext_proc thaw's Envoy: the module thaw did not start): Envoy → backend",
			t: newTarget("serve", th.httpURL, serveRev.host(), maxConns), procs: []namedPid{thawEnvoyPid, thawPid}},
		{name: "thaw proxy", description: "thaw proxy mode, ext_proc activator: Envoy → internal listener → ext_proc to thaw → backend of its own revision",
			t: newTarget("proxy", th.httpURL, proxyRev.host(), maxConns), procs: []namedPid{thawEnvoyPid, thawPid}},
		{name: "Envoy + queue-proxy", description: "plain Envoy → Knative queue-proxy → backend (Knative's warm path)",
			t: newTarget("envoy-qp", frontURL, "qp.bench", maxConns)},
		{name: "Envoy + KEDA interceptor", description: "plain Envoy → KEDA HTTP add-on interceptor → backend (KEDA's path)",
			t: newTarget("envoy-keda", frontURL, peers.KedaHost, maxConns)},
		{name: "queue-proxy alone", description: "Knative queue-proxy → backend",
			t: newTarget("qp", fmt.Sprintf("http://127.0.0.1:%d", qpPort), "qp.bench", maxConns)},
		{name: "KEDA interceptor alone", description: "KEDA HTTP add-on interceptor → backend",
			t: newTarget("keda", fmt.Sprintf("http://127.0.0.1:%d", kedaPort), peers.KedaHost, maxConns)},
		{name: "backend direct", description: "the backend itself, no proxy",
			t: newTarget("direct", fmt.Sprintf("http://127.0.0.1:%d", ws.Port), "direct.bench", maxConns)},
	}
	if qpProc != nil {
		qpPid := namedPid{"queue-proxy", qpProc.Pid()}
		sides[3].procs, sides[5].procs = []namedPid{envoyPid, qpPid}, []namedPid{qpPid}
	} else {
		sides[3].failed, sides[5].failed = "queue-proxy did not start: "+qp.Error, "queue-proxy did not start: "+qp.Error
	}
	if kedaProc != nil {
		kPid := namedPid{"interceptor", kedaProc.Pid()}
		sides[4].procs, sides[6].procs = []namedPid{envoyPid, kPid}, []namedPid{kPid}
	} else {
		sides[4].failed, sides[6].failed = "interceptor did not start: "+keda.Error, "interceptor did not start: "+keda.Error
	}

	pm := startPeersModule(e, maxConns, serveRev)
	mod, modSide := pm.ms, pm.module
	if mod != nil {
		defer e.stopLogged(mod.th.process)
		res.Peers = append(res.Peers, results.Peer{Name: "thaw (activator module)", Version: peers.ThawVersion(e.thawBin),
			Command: "thaw local -f thaw-module.yaml --activator=module --envoy-concurrency " + fmt.Sprint(e.envoyWorkers)})
		sides[1] = pm.serve
	} else {
		fail(fmt.Errorf("%s: %s", modSide.name, modSide.failed))
	}
	sides = slices.Insert(sides, 3, modSide)

	// One request through each side: every running side must answer 200.
	var live []*peerSide
	for _, sd := range sides {
		if sd.failed == "" {
			if err := oneRequest(e.ctx, sd.t); err != nil {
				sd.failed = err.Error()
				fail(fmt.Errorf("%s: %w", sd.name, err))
			}
		}
		if sd.failed == "" {
			live = append(live, sd)
			e.logf("peers: %s answers", sd.name)
		}
	}
	if !pc.smoke && len(live) > 1 {
		measurePeers(e, res, live)
	}
	if nCold > 0 {
		e.logf("peers: %d cold starts of thaw, then of the KEDA interceptor", nCold)
		res.Cold = append(res.Cold, thawCold(e, th, colds))
		if kedaProc != nil && sides[4].failed == "" {
			res.Cold = append(res.Cold, kedaCold(e, api, frontURL, ws.Port, nCold))
		}
		for _, c := range res.Cold {
			e.logf("peers: cold %s: overhead p50 %.1f ms p90 %.1f ms max %.1f ms, %d/%d errors %v", c.Name, c.P50Ms, c.P90Ms, c.MaxMs, c.Errors, c.N, c.Fails)
			if c.Errors > 0 {
				fail(fmt.Errorf("cold starts %s: %d/%d failed: %v", c.Name, c.Errors, c.N, c.Fails))
			}
		}
	}
	for _, sd := range sides {
		out := findSide(res, sd.name)
		if out == nil {
			res.Sides = append(res.Sides, results.PeerSide{Name: sd.name})
			out = &res.Sides[len(res.Sides)-1]
		}
		out.Description, out.Failed = sd.description, sd.failed
	}
	if mod != nil && modSide.failed == "" {
		// The module side really took the module path: its thaw's
		// ext_proc answered nothing.
		if err := mod.check(e.ctx); err != nil {
			fail(err)
		}
	}
	if err := th.waitStatus(e.ctx, 5*time.Second, "proxy still in proxy mode", func(r revStatus) bool {
		return r.Mode == "proxy"
	}, proxyRev.name); err != nil {
		fail(err)
	}
	res.Finished, res.Load1End = time.Now(), load1()
	return res, nil
}

// findSide returns the result row named name, or nil.
func findSide(res *results.Peers, name string) *results.PeerSide {
	for i := range res.Sides {
		if res.Sides[i].Name == name {
			return &res.Sides[i]
		}
	}
	return nil
}

// oneRequest sends GET / through t and wants 200 within 10 s (retrying
// every 200 ms: a peer's routing table may fill after it reports ready).
func oneRequest(ctx context.Context, t *target) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var last string
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, t.url, nil)
		if err != nil {
			return err
		}
		req.Host = t.host
		if resp, err := t.client.Do(req); err != nil {
			last = err.Error()
		} else {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = resp.Status
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("no 200 through %s within 10 s (last: %s)", t.url, last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// measurePeers runs the latency rounds (all sides interleaved request by
// request) and the throughput rounds (each side alone, closed loop, CPU of
// its processes from /proc) and fills res.Sides in the order of sides.
func measurePeers(e *env, res *results.Peers, sides []*peerSide) {
	ts := make([]*target, len(sides))
	for i, sd := range sides {
		ts[i] = sd.t
	}
	res.Sides = make([]results.PeerSide, len(sides))
	for i, sd := range sides {
		res.Sides[i].Name = sd.name
	}
	round := time.Duration(res.RoundSeconds * float64(time.Second))
	e.logf("peers: warm-up, then %d rounds of %s: %d sides interleaved, %d requests/s in all", res.Rounds, round, len(sides), res.RateRPS)
	interleavedRate(ts, res.RateRPS, time.Second, nil)
	all := make([]sample, len(sides))
	for r := range res.Rounds {
		res.RoundLoad1 = append(res.RoundLoad1, load1())
		ss := make([]*sample, len(sides))
		for i := range ss {
			ss[i] = &sample{}
		}
		interleavedRate(ts, res.RateRPS, round, ss)
		var line strings.Builder
		for i, s := range ss {
			l := s.latency()
			o := &res.Sides[i]
			o.RoundP50Ms, o.RoundP90Ms, o.RoundP99Ms = append(o.RoundP50Ms, l.P50Ms), append(o.RoundP90Ms, l.P90Ms), append(o.RoundP99Ms, l.P99Ms)
			all[i].merge(s)
			fmt.Fprintf(&line, " | %s %.3f/%.3f ms (%d err)", sides[i].t.name, l.P50Ms, l.P99Ms, l.Errors)
		}
		e.logf("peers: round %d (load %.1f)%s", r+1, res.RoundLoad1[r], line.String())
		if e.ctx.Err() != nil {
			return
		}
	}
	for i := range sides {
		res.Sides[i].Latency = all[i].latency()
		if len(all[i].errs) > 0 {
			e.logf("peers: %s errors %v", sides[i].name, all[i].errs)
		}
	}
	tdur := time.Duration(res.ThroughputSeconds * float64(time.Second))
	cpu := make([][]time.Duration, len(sides))
	n := make([]float64, len(sides))
	for r := range res.ThroughputRounds {
		for k := range sides {
			i := (k + r) % len(sides)
			sd := sides[i]
			pids := make([]int, len(sd.procs))
			for j, p := range sd.procs {
				pids[j] = p.pid
			}
			m := startCPU(pids...)
			rps, errs := closedLoop(sd.t, res.Concurrency, tdur)
			used := m.stop()
			if cpu[i] == nil {
				cpu[i] = make([]time.Duration, len(pids))
			}
			for j := range used {
				cpu[i][j] += used[j]
			}
			n[i] += rps * tdur.Seconds()
			res.Sides[i].RoundThroughput = append(res.Sides[i].RoundThroughput, rps)
			res.Sides[i].ThroughputErrors += errs
			e.logf("peers: throughput round %d %-24s %.0f req/s (%d errors), CPU %v", r+1, sd.name, rps, errs, used)
		}
		if e.ctx.Err() != nil {
			return
		}
	}
	for i, sd := range sides {
		if n[i] == 0 {
			continue
		}
		res.Sides[i].CPURequests = int64(n[i])
		for j, p := range sd.procs {
			res.Sides[i].CPU = append(res.Sides[i].CPU, results.ProcessCPU{Process: p.name,
				SecondsPer10k: cpu[i][j].Seconds() / n[i] * 10000})
		}
	}
}
