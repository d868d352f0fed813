//go:build e2e

package e2e

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/thaw-dev/thaw/revision"
	"github.com/thaw-dev/thaw/xds/translate"
)

// kubeOnDemandHosts is TestKubeModuleIdleHoldPath's arm with `thaw run
// --activator=module --on-demand-hosts` (docs/scaling.md, "Virtual hosts
// on demand"): the Revision key is at zero, so Envoy's listener has the
// on_demand filter and no virtual host of it; an unknown host gets
// Envoy's 404 (thaw answers it unknown); a request for the Revision's host
// is paused while Envoy fetches the host over VHDS, wakes the Revision
// through /scale and gets 200 from its pod.
func kubeOnDemandHosts(t *testing.T, kubeconfig string, key revision.Key) {
	run, proxy, th := startKubeModuleRun(t, kubeconfig, "--on-demand-hosts")
	dump := func(resource string) string { return configDump(t, proxy, resource) }
	waitStatus(t, th, key.String(), 30*time.Second, "the Revision at zero in proxy mode", func(r map[string]any) bool {
		return r["mode"] == "proxy" && num(r, "ready") == 0
	})
	if l := dump("dynamic_listeners"); !strings.Contains(l, translate.OnDemandFilterName) {
		t.Fatalf("listener thaw_http has no %s with --on-demand-hosts:\n%.2000s", translate.OnDemandFilterName, l)
	}
	vhost := strconv.Quote(translate.VirtualHostName(revision.ClusterName(key)))
	if strings.Contains(dump("dynamic_route_configs"), vhost) {
		t.Fatalf("Envoy holds virtual host %s of a Revision at zero before any request", vhost)
	}

	cl := client(60 * time.Second)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	// The first answers may race thaw_http's first VHDS answer: retried
	// until Envoy answers, bounded by pollFor.
	var code int
	if err := pollFor(t, func() bool {
		code, _, _, _ = get(ctx, cl, th, "nobody.example.com", "/")
		return code != 0
	}); err != nil || code != 404 {
		t.Fatalf("unknown host: code=%d (%v), want Envoy's 404", code, err)
	}
	coldStart(t, th, run, "hello.example.com", key.Namespace+"/hello-")
	if !strings.Contains(dump("dynamic_route_configs"), vhost) {
		t.Fatalf("virtual host %s not in Envoy after its request", vhost)
	}
	for _, series := range []string{`thaw_xds_on_demand_answers_total{result="found"}`, `thaw_xds_on_demand_answers_total{result="unknown"}`} {
		if v := metricValue(t, th, series); v < 1 {
			t.Errorf("%s = %v, want at least 1", series, v)
		}
	}
}
