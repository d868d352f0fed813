//go:build e2e

package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/thaw-dev/thaw/revision"
)

// growth is what adding one revision to a running fleet and removing it
// again cost, as measured by addAndRemove.
type growth struct {
	// addBytes, removeBytes: bytes of every xDS response the server sent
	// for the change (all types), from thaw_xds_pushed_bytes_total.
	addBytes, removeBytes float64
	// firstRequest: registry Upsert to the first 200 answer from Envoy for
	// the new host (polled every millisecond), including the registry's
	// holdoff and the server's make-before-break stages.
	firstRequest time.Duration
	// envoyCPU: CPU seconds Envoy used from the add to the end of the
	// removal (both route table updates, the polling requests included;
	// /proc resolution 10 ms).
	envoyCPU float64
}

// addAndRemove adds revision key with host, served by a fresh loopback
// backend, waits until Envoy answers it, then deletes it and waits until
// Envoy answers 404 and the server has sent the cluster and endpoint
// removals. Each wait is bounded (30 s).
func (env *xdsEnv) addAndRemove(ctx context.Context, tb testing.TB, key revision.Key, host string) growth {
	tb.Helper()
	be := startBackend(tb, "grown")
	var g growth
	_, before := pushed(tb, env.prom, "")
	cpuBefore := cpuSeconds(tb, env.envoy.Pid())
	spec := revision.DefaultSpec()
	spec.Hosts = []string{host}
	start := time.Now()
	env.reg.SetBackends(key, []revision.Backend{be.addr()})
	env.reg.SetMode(key, revision.ModeServe)
	env.reg.Upsert(key, spec)
	if !pollUntil(ctx, 30*time.Second, time.Millisecond, func() bool { return env.status(tb, host) == 200 }) {
		tb.Fatalf("new host %s never answered 200", host)
	}
	g.firstRequest = time.Since(start)
	env.confirm(tb, key)
	// The add is complete once the route ACK is in: let the last response
	// be counted.
	settle(ctx, tb, env.prom)
	_, afterAdd := pushed(tb, env.prom, "")
	g.addBytes = afterAdd - before

	clustersBefore := pushesOf(tb, env.prom, "clusters")
	endpointsBefore := pushesOf(tb, env.prom, "endpoints")
	env.reg.Delete(key)
	if !pollUntil(ctx, 30*time.Second, time.Millisecond, func() bool { return env.status(tb, host) == 404 }) {
		tb.Fatalf("deleted host %s still answered", host)
	}
	if !pollUntil(ctx, 30*time.Second, 5*time.Millisecond, func() bool {
		return pushesOf(tb, env.prom, "clusters") > clustersBefore && pushesOf(tb, env.prom, "endpoints") > endpointsBefore
	}) {
		tb.Fatal("cluster and endpoint removals never sent")
	}
	settle(ctx, tb, env.prom)
	_, afterRemove := pushed(tb, env.prom, "")
	g.removeBytes = afterRemove - afterAdd
	g.envoyCPU = cpuSeconds(tb, env.envoy.Pid()) - cpuBefore
	return g
}

// status answers GET / for host through Envoy: the status code, or 0 when
// the request failed.
func (env *xdsEnv) status(tb testing.TB, host string) int {
	tb.Helper()
	code, _ := env.get(tb, host, nil)
	return code
}

// settle waits until the server's response count stays the same for
// 200 ms (at most 10 s): the responses of one change have all been sent.
func settle(ctx context.Context, tb testing.TB, reg *prometheus.Registry) {
	tb.Helper()
	last, _ := pushed(tb, reg, "")
	stable := time.Now()
	for i := 0; i < 1000 && ctx.Err() == nil; i++ {
		time.Sleep(10 * time.Millisecond)
		n, _ := pushed(tb, reg, "")
		if n != last {
			last, stable = n, time.Now()
			continue
		}
		if time.Since(stable) >= 200*time.Millisecond {
			return
		}
	}
}

// pollUntil calls cond every interval until it holds (true) or limit or
// ctx ends (false).
func pollUntil(ctx context.Context, limit, interval time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(limit)
	for i := 0; time.Now().Before(deadline) && ctx.Err() == nil && i < int(limit/interval)+1; i++ {
		if cond() {
			return true
		}
		time.Sleep(interval)
	}
	return false
}

// pushesOf returns the xDS server's response count for one short type
// name ("clusters").
func pushesOf(tb testing.TB, reg *prometheus.Registry, typ string) float64 {
	tb.Helper()
	fams, err := reg.Gather()
	if err != nil {
		tb.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != "thaw_xds_pushes_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			if len(m.GetLabel()) == 1 && m.GetLabel()[0].GetValue() == typ {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}
