package main

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"time"

	"github.com/thaw-dev/thaw/bench/results"
	"github.com/thaw-dev/thaw/e2e/harness"
)

// egSetup is what the Envoy Gateway scenarios (eg, egsplit) run on: thaw
// local --eg-extension with the scenario's revisions, envoy-gateway
// standalone with its routes, and the pid of the Envoy EG started.
type egSetup struct {
	th       *thaw
	eg       *egProc
	envoyPid int
}

// egSetupOptions says what startEGSetup starts.
type egSetupOptions struct {
	// name is the work directory's name under the scenario's work dir.
	name string
	// revs are thaw local's revisions.
	revs []rev
	// warm are the revisions (among revs, min-scale 1) waited for in
	// serve mode with one ready backend.
	warm []rev
	// plain is the revision (among warm) whose backend process the plain
	// EG Backend on host plain.bench points at.
	plain rev
	// routes renders EG's routes (appended to EG's base resources) from
	// plain's backend port.
	routes func(backendPort int) string
	// hosts are the hosts every route serves: each must answer 200
	// through EG's Envoy before the scenario measures.
	hosts []string
}

// startEGSetup checks the scenario's needs (egPreflight), starts thaw and
// waits for the warm revisions, starts envoy-gateway with the routes, and
// waits (up to 120 s each) until EG's Envoy routes every host. On error
// what was started is stopped; otherwise the caller calls stop.
func startEGSetup(e *env, o egSetupOptions) (_ *egSetup, err error) {
	if err := egPreflight(e); err != nil {
		return nil, err
	}
	dir, err := e.tempDir(o.name)
	if err != nil {
		return nil, err
	}
	s := &egSetup{}
	defer func() {
		if err != nil {
			s.stop(e)
		}
	}()
	s.th, err = startThawArgs(e.ctx, e, dir, localConfig(e.workloadBin, o.revs...), "--eg-extension")
	if err != nil {
		return nil, err
	}
	names := make([]string, len(o.warm))
	for i, r := range o.warm {
		names[i] = r.name
	}
	if err := s.th.waitStatus(e.ctx, 30*time.Second, "serve mode, 1 ready", func(r revStatus) bool {
		return r.Mode == "serve" && r.Ready == 1
	}, names...); err != nil {
		return nil, err
	}
	backendPort, err := localBackendPort(filepath.Join(dir, "state"), "local/"+o.plain.name)
	if err != nil {
		return nil, err
	}
	s.eg, err = startEGStandalone(e, dir, s.th.grpcAddr, s.th.grpcPort, o.routes(backendPort))
	if err != nil {
		return nil, err
	}
	c := &http.Client{Timeout: 5 * time.Second}
	for _, h := range o.hosts {
		ctx, cancel := context.WithTimeout(e.ctx, 120*time.Second)
		_, err := harness.WaitRoute(ctx, c, harness.RouteWait{URL: s.eg.url, Host: h, Gateway: s.eg.Process})
		cancel()
		if err != nil {
			return nil, fmt.Errorf("EG's Envoy never routed %s: %w\n%s", h, err, s.eg.logTail(30))
		}
	}
	if s.envoyPid, err = s.eg.envoyPid(); err != nil {
		return nil, err
	}
	return s, nil
}

// stop stops envoy-gateway (and its Envoy), then thaw; a failure to stop
// cleanly is logged.
func (s *egSetup) stop(e *env) {
	if s.eg != nil {
		e.stopLogged(s.eg.process)
	}
	if s.th != nil {
		e.stopLogged(s.th.process)
	}
}

// egSide is one side of an Envoy Gateway scenario's closed-loop rounds:
// the target, where its figures go, and EG's Envoy's CPU time and the
// requests it served so far.
type egSide struct {
	t   *target
	s   *results.Side
	cpu time.Duration
	n   float64
}

// egThroughput runs rounds closed-loop rounds of every side (concurrency
// in flight for dur each, the order rotating each round), measuring EG's
// Envoy's CPU time (/proc of envoyPid) per side, and fills each side's
// round figures, median throughput and CPU per request. label prefixes
// the log lines ("eg: throughput", "egsplit:").
func egThroughput(e *env, label string, envoyPid int, sides []egSide, rounds, concurrency int, dur time.Duration) error {
	for r := range rounds {
		for i := range sides {
			sd := &sides[(i+r)%len(sides)]
			m := startCPU(envoyPid)
			rps, errs := closedLoop(sd.t, concurrency, dur)
			used := m.stop()[0]
			sd.cpu += used
			if rps > 0 {
				sd.s.RoundEnvoyCPUUs = append(sd.s.RoundEnvoyCPUUs, float64(used.Microseconds())/(rps*dur.Seconds()))
			}
			sd.n += rps * dur.Seconds()
			sd.s.RoundThroughput = append(sd.s.RoundThroughput, rps)
			sd.s.ThroughputErrors += errs
			e.logf("%s round %d %-11s %.0f req/s (%d errors)", label, r+1, sd.t.name, rps, errs)
		}
		if err := e.ctx.Err(); err != nil {
			return err
		}
	}
	for _, sd := range sides {
		sd.s.ThroughputRPS = results.Quantile(sd.s.RoundThroughput, 0.5)
		if sd.n > 0 {
			sd.s.EnvoyCPUUsPerRequest = float64(sd.cpu.Microseconds()) / sd.n
			sd.s.CPURequests = int64(sd.n)
		}
	}
	return nil
}
