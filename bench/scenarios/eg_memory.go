package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/thaw-dev/thaw/bench/results"
	"github.com/thaw-dev/thaw/e2e/harness"
)

// egMemory adds idle Revisions (and their HTTPRoutes) to EG's resources and
// waits (up to 5 min) until EG's Envoy has warmed a cluster for each, then
// records Envoy's RSS growth per Revision and the time it took.
func egMemory(e *env, eg *egProc, envoyPid int, thawAdmin string, idle []rev, out *results.EnvoyGateway) error {
	admin, err := eg.envoyAdmin()
	if err != nil {
		return err
	}
	c := &http.Client{Timeout: 5 * time.Second}
	before, _, err := envoyClusters(e.ctx, c, admin)
	if err != nil {
		return err
	}
	rss0, err := harness.RSS(envoyPid)
	if err != nil {
		return err
	}
	calls0, secs0, err := hookTotals(thawAdmin)
	if err != nil {
		return err
	}
	t0 := time.Now()
	// A file of its own: rewriting EG's first file makes EG recreate the
	// Gateway, and with it restart its Envoy.
	if err := writeFile(filepath.Join(filepath.Dir(eg.resPath), "idle.yaml"), revisionRoutes(idle)); err != nil {
		return err
	}
	deadline := t0.Add(5 * time.Minute)
	for {
		active, warming, err := envoyClusters(e.ctx, c, admin)
		if err == nil && active >= before+len(idle) && warming == 0 {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("EG's Envoy has %d active clusters (%d warming) 5 min after adding %d Revisions to %d (%v)",
				active, warming, len(idle), before, err)
		}
		time.Sleep(250 * time.Millisecond)
	}
	out.AddedRevisions, out.AddedReadyMs = len(idle), results.Millis(time.Since(t0))
	calls1, secs1, err := hookTotals(thawAdmin)
	if err != nil {
		return err
	}
	out.AddedHookCalls, out.AddedHookSeconds = int(calls1-calls0), secs1-secs0
	time.Sleep(2 * time.Second) // let allocations settle
	if pid, err := eg.envoyPid(); err != nil || pid != envoyPid {
		return fmt.Errorf("EG restarted its Envoy while Revisions were added (pid %d, then %d, %v)", envoyPid, pid, err)
	}
	rss1, err := harness.RSS(envoyPid)
	if err != nil {
		return err
	}
	out.EnvoyRSSBeforeBytes, out.EnvoyRSSAfterBytes = rss0, rss1
	e.logf("eg: %d Revisions added: every cluster warm after %.0f ms (thaw answered %d hook calls in %.3f s in all); EG's Envoy RSS %d → %d MiB (%.1f KiB per Revision)",
		len(idle), out.AddedReadyMs, out.AddedHookCalls, out.AddedHookSeconds, rss0>>20, rss1>>20, float64(rss1-rss0)/1024/float64(len(idle)))
	return nil
}

// envoyClusters reads cluster_manager.active_clusters and
// warming_clusters from an Envoy admin.
func envoyClusters(ctx context.Context, c *http.Client, admin string) (active, warming int, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, admin+"/stats?filter=^cluster_manager%5C.(active|warming)_clusters$", nil)
	if err != nil {
		return 0, 0, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, 0, err
	}
	found := 0
	for _, l := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(l, ": ")
		if !ok {
			continue
		}
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil {
			continue
		}
		switch k {
		case "cluster_manager.active_clusters":
			active, found = n, found+1
		case "cluster_manager.warming_clusters":
			warming, found = n, found+1
		}
	}
	if found != 2 {
		return 0, 0, fmt.Errorf("envoy stats: no cluster_manager counts in %q", b)
	}
	return active, warming, nil
}

// hookTotals sums thaw's EG hook calls and the seconds spent answering
// them (thaw_eg_hook_duration_seconds, all hooks) from its /metrics.
func hookTotals(thawAdmin string) (calls, seconds float64, err error) {
	m, err := scrape(thawAdmin + "/metrics")
	if err != nil {
		return 0, 0, fmt.Errorf("thaw metrics: %w", err)
	}
	for k, v := range m {
		switch {
		case strings.HasPrefix(k, "thaw_eg_hook_duration_seconds_count"):
			calls += v
		case strings.HasPrefix(k, "thaw_eg_hook_duration_seconds_sum"):
			seconds += v
		}
	}
	return calls, seconds, nil
}
