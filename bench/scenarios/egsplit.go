package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/thaw-dev/thaw/bench/results"
	"github.com/thaw-dev/thaw/e2e/harness"
)

// runEGSplit measures a RevisionSplit route inside Envoy Gateway
// (docs/traffic-splitting.md): real envoy-gateway and its Envoy, thaw
// local --eg-extension answering the hooks and serving the Revisions'
// endpoints. Three hosts on the same Envoy: a plain EG Backend with the
// Revision main's backend address, an HTTPRoute to the Revision main, and
// an HTTPRoute to the RevisionSplit split (main 90%, canary 10%; both
// Revisions warm, one backend process each). After checking the split's
// shares over sequential requests, closed-loop rounds run the three sides
// back to back (the order rotating each round) and divide EG's Envoy's
// CPU time (/proc) by the requests served.
func runEGSplit(e *env) (*results.EGSplit, error) {
	one := map[string]string{"min-scale": "1", "max-scale": "1", "initial-scale": "1", "target-burst-capacity": "0"}
	main, canary := rev{name: "main", autoscaling: one}, rev{name: "canary", autoscaling: one}
	setup, err := startEGSetup(e, egSetupOptions{name: "egsplit", revs: []rev{main, canary}, warm: []rev{main, canary}, plain: main,
		routes: func(backendPort int) string { return egRoutes(main, backendPort, nil) + egSplitRoute(main, canary) },
		hosts:  []string{main.host(), "plain.bench", "split.bench"}})
	if err != nil {
		return nil, err
	}
	defer setup.stop(e)
	eg, envoyPid := setup.eg, setup.envoyPid
	c := &http.Client{Timeout: 5 * time.Second}

	out := &results.EGSplit{Concurrency: 16, ThroughputRounds: 20, ThroughputSeconds: 2, SplitChecked: 1000}
	if e.quick {
		out.ThroughputRounds, out.ThroughputSeconds, out.SplitChecked = 2, 1, 200
	}
	canaryN, err := countBodies(c, eg.url, "split.bench", "hello from "+canary.name, out.SplitChecked)
	if err != nil {
		return nil, err
	}
	out.CanaryShare = 100 * float64(canaryN) / float64(out.SplitChecked)
	out.Plain = results.Side{Name: "eg-plain", Description: "EG's Envoy → an EG Backend with main's backend address"}
	out.Revision = results.Side{Name: "eg-revision", Description: "EG's Envoy → the Revision main's EDS cluster from thaw (serve mode)"}
	out.Split = results.Side{Name: "eg-split", Description: "EG's Envoy → the RevisionSplit: weighted clusters main 90% / canary 10% (serve mode)"}
	sides := []egSide{
		{t: newTarget("eg-plain", eg.url, "plain.bench", 256), s: &out.Plain},
		{t: newTarget("eg-revision", eg.url, main.host(), 256), s: &out.Revision},
		{t: newTarget("eg-split", eg.url, "split.bench", 256), s: &out.Split},
	}
	for i := range sides {
		closedLoop(sides[i].t, out.Concurrency, time.Second) // warm connections
	}
	if err := egThroughput(e, "egsplit:", envoyPid, sides, out.ThroughputRounds, out.Concurrency,
		time.Duration(out.ThroughputSeconds*float64(time.Second))); err != nil {
		return nil, err
	}
	e.logf("egsplit: canary share %.1f%% of %d; Envoy CPU per request plain %.1f revision %.1f split %.1f µs",
		out.CanaryShare, out.SplitChecked, out.Plain.EnvoyCPUUsPerRequest, out.Revision.EnvoyCPUUsPerRequest, out.Split.EnvoyCPUUsPerRequest)
	return out, nil
}

// egPreflight checks what an EG scenario needs before it starts anything:
// the envoy-gateway binary, and the fixed ports EG standalone binds (its
// xDS server and its metrics) free.
func egPreflight(e *env) error {
	if _, err := os.Stat(e.egBin); err != nil {
		return fmt.Errorf("envoy-gateway not found (%w): run `make tools-envoy-gateway`", err)
	}
	for _, p := range []int{18000, 19001} {
		if conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", p), time.Second); err == nil {
			conn.Close()
			return fmt.Errorf("127.0.0.1:%d is in use: Envoy Gateway standalone needs it", p)
		}
	}
	return nil
}

// countBodies sends n sequential requests to base/ with Host host and
// counts the answers whose body contains want; any failed request is an
// error.
func countBodies(c *http.Client, base, host, want string, n int) (int, error) {
	found := 0
	for i := range n {
		req, err := http.NewRequest(http.MethodGet, base+"/", nil)
		if err != nil {
			return 0, err
		}
		req.Host = host
		resp, err := c.Do(req)
		if err != nil {
			return 0, fmt.Errorf("%s request %d: %w", host, i, err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			return 0, fmt.Errorf("%s request %d: status %d %v", host, i, resp.StatusCode, err)
		}
		if strings.Contains(string(b), want) {
			found++
		}
	}
	return found, nil
}

// egSplitRoute renders the RevisionSplit split (a 90%, b 10%) and its
// HTTPRoute on host split.bench.
func egSplitRoute(a, b rev) string {
	return harness.EGSplitRoute("split", "split.bench",
		harness.EGSplitMember{RevisionName: a.name, Percent: 90}, harness.EGSplitMember{RevisionName: b.name, Percent: 10})
}
