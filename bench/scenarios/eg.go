package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/thaw-dev/thaw/bench/results"
)

// runEG measures thaw as Envoy Gateway's extension (docs/envoy-gateway.md):
// real envoy-gateway (standalone, file provider, host infrastructure)
// starts the real Envoy with thaw's bootstrap merge, and thaw local
// --eg-extension answers its hooks and serves the Revisions' endpoints.
//
//   - warm path: one constant-rate attack alternates request by request
//     between an HTTPRoute to the Revision "warm" (min-scale 1, serve mode)
//     and an HTTPRoute to a plain EG Backend with the same backend
//     process's address, through the same Envoy; then throughput with 16
//     in flight per side and EG's Envoy's CPU per request;
//   - cold starts: one request to each of n Revisions at zero, as the cold
//     scenario does through thaw's own fleet;
//   - memory: idleN more Revisions at zero (one HTTPRoute each) added to
//     EG's resources at once: EG's Envoy's RSS growth per Revision (one
//     cluster and one EDS stream to thaw each) and the time until every
//     new cluster has its endpoints.
func runEG(e *env, n, idleN int) (*results.EnvoyGateway, error) {
	one := map[string]string{"min-scale": "1", "max-scale": "1", "initial-scale": "1", "target-burst-capacity": "0"}
	warm := rev{name: "warm", autoscaling: one}
	revs := []rev{warm}
	for i := range n {
		revs = append(revs, rev{name: fmt.Sprintf("cold-%d", i), autoscaling: map[string]string{"initial-scale": "0"}})
	}
	idle := make([]rev, idleN)
	for i := range idle {
		idle[i] = rev{name: fmt.Sprintf("idle-%d", i), autoscaling: map[string]string{"initial-scale": "0"}}
	}
	setup, err := startEGSetup(e, egSetupOptions{name: "eg", revs: append(revs, idle...), warm: []rev{warm}, plain: warm,
		routes: func(backendPort int) string { return egRoutes(warm, backendPort, revs[1:]) },
		hosts:  []string{warm.host(), "plain.bench"}})
	if err != nil {
		return nil, err
	}
	defer setup.stop(e)
	th, eg, envoyPid := setup.th, setup.eg, setup.envoyPid

	out := &results.EnvoyGateway{RateRPS: e.rate, Rounds: 20, RoundSeconds: 2, Concurrency: 16, ThroughputRounds: 10, ThroughputSeconds: 2}
	if e.quick {
		out.Rounds, out.RoundSeconds, out.ThroughputRounds, out.ThroughputSeconds = 2, 1, 1, 1
	}
	out.Plain = results.Side{Name: "eg-plain", Description: "EG's Envoy → an EG Backend with the backend process's address"}
	out.Revision = results.Side{Name: "eg-revision", Description: "EG's Envoy → the Revision's EDS cluster from thaw (serve mode), the same backend process"}
	plain, revT := newTarget("eg-plain", eg.url, "plain.bench", 256), newTarget("eg-revision", eg.url, warm.host(), 256)
	pairedRate(plain, revT, e.rate, time.Second, nil, nil)
	round := time.Duration(out.RoundSeconds * float64(time.Second))
	var all [2]sample
	for r := range out.Rounds {
		var sp, sr sample
		pairedRate(plain, revT, e.rate, round, &sp, &sr)
		lp, lr := sp.latency(), sr.latency()
		e.logf("eg: round %d plain p50 %.3f p99 %.3f ms | revision p50 %.3f p99 %.3f ms (%d+%d errors)",
			r+1, lp.P50Ms, lp.P99Ms, lr.P50Ms, lr.P99Ms, lp.Errors, lr.Errors)
		all[0].merge(&sp)
		all[1].merge(&sr)
		out.Plain.RoundP50Ms, out.Plain.RoundP99Ms = append(out.Plain.RoundP50Ms, lp.P50Ms), append(out.Plain.RoundP99Ms, lp.P99Ms)
		out.Revision.RoundP50Ms, out.Revision.RoundP99Ms = append(out.Revision.RoundP50Ms, lr.P50Ms), append(out.Revision.RoundP99Ms, lr.P99Ms)
		if err := e.ctx.Err(); err != nil {
			return nil, err
		}
	}
	out.Plain.Latency, out.Revision.Latency = all[0].latency(), all[1].latency()
	sides := []egSide{{t: plain, s: &out.Plain}, {t: revT, s: &out.Revision}}
	if err := egThroughput(e, "eg: throughput", envoyPid, sides, out.ThroughputRounds, out.Concurrency,
		time.Duration(out.ThroughputSeconds*float64(time.Second))); err != nil {
		return nil, err
	}

	cc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DisableCompression: true}}
	var overhead, total []float64
	out.Cold.N = len(revs) - 1
	for _, r := range revs[1:] {
		s, err := coldAt(e.ctx, cc, eg.url, r)
		if err != nil {
			out.Cold.Errors++
			if len(out.Cold.Fails) < 5 {
				out.Cold.Fails = append(out.Cold.Fails, err.Error())
			}
			continue
		}
		out.Cold.Samples = append(out.Cold.Samples, s)
		overhead, total = append(overhead, s.OverheadMs), append(total, s.TotalMs)
	}
	out.Cold.OverheadP50Ms, out.Cold.OverheadP99Ms = results.Quantile(overhead, 0.5), results.Quantile(overhead, 0.99)
	out.Cold.OverheadMaxMs = results.Quantile(overhead, 1)
	out.Cold.TotalP50Ms, out.Cold.TotalP99Ms = results.Quantile(total, 0.5), results.Quantile(total, 0.99)
	if idleN > 0 {
		if err := egMemory(e, eg, envoyPid, th.adminURL, idle, out); err != nil {
			return nil, err
		}
	}
	e.logf("eg: warm p50 plain %.3f revision %.3f ms; throughput plain %.0f revision %.0f req/s; Envoy CPU per request plain %.1f revision %.1f µs; cold overhead p50 %.1f ms (%d/%d errors)",
		out.Plain.Latency.P50Ms, out.Revision.Latency.P50Ms, out.Plain.ThroughputRPS, out.Revision.ThroughputRPS,
		out.Plain.EnvoyCPUUsPerRequest, out.Revision.EnvoyCPUUsPerRequest, out.Cold.OverheadP50Ms, out.Cold.Errors, out.Cold.N)
	return out, nil
}

// localBackendPort reads the port of revision's first backend process from
// thaw local's state file in stateDir.
func localBackendPort(stateDir, revision string) (int, error) {
	b, err := os.ReadFile(filepath.Join(stateDir, "local-instances.json"))
	if err != nil {
		return 0, fmt.Errorf("thaw local state: %w", err)
	}
	var st struct {
		Instances []struct {
			Revision string `json:"revision"`
			Port     int    `json:"port"`
		} `json:"instances"`
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return 0, fmt.Errorf("thaw local state: %w", err)
	}
	for _, in := range st.Instances {
		if in.Revision == revision && in.Port > 0 {
			return in.Port, nil
		}
	}
	return 0, fmt.Errorf("thaw local state: no backend of %s", revision)
}
