package main

import (
	"fmt"

	"github.com/thaw-dev/thaw/bench/results"
	"github.com/thaw-dev/thaw/e2e/harness"
)

// The like-for-like baseline of the module's container-concurrency-4
// side: a static Envoy routing to the serve revision's backend with
// Envoy's own limit of limit4 requests at once (HTTP/1.1, so
// max_connections bounds the requests on the backend; the others wait in
// Envoy's connection pool, no module; max_requests would answer 503 past
// the limit instead of queueing). Against it, the module side's
// ratio is what the module adds to any concurrency limit kept inside
// Envoy; against the unlimited static Envoy, this side's ratio is what
// the limit itself costs (fewer requests share each event-loop pass, and
// the backend serves 4 at once while the unlimited sides send it 16).

const limit4 = 4

// startStaticEnvoyLimit runs the limited static Envoy and waits for its
// admin /ready.
func startStaticEnvoyLimit(e *env, dir string, backendPort int) (*staticEnvoy, error) {
	boot := harness.StaticBootstrap{
		Listeners: []harness.HTTPListener{{Name: "static_http", RouteConfigName: "static",
			VirtualHosts: []string{harness.CatchAll("backend", "{cluster: backend}")}}},
		Clusters: []string{harness.StaticCluster("backend", backendPort) + "\n" + fmt.Sprintf(`circuit_breakers:
  thresholds:
  - {max_connections: %d, max_pending_requests: 100000, max_requests: 100000}`, limit4)},
		Tail: adminAnyPort,
	}.String()
	ev, err := startEnvoy(e, dir, "static envoy (limit 4)", "static-envoy-limit4", boot)
	if err != nil {
		return nil, err
	}
	return &staticEnvoy{process: ev.process, httpURL: ev.url("static_http")}, nil
}

// newLimitResult returns the limited static Envoy's result side.
func newLimitResult(p *results.Paths) {
	p.StaticLimit4 = &results.Side{Name: "limit4", Description: fmt.Sprintf(
		"plain Envoy, static config, Envoy's own limit of %d requests at once to the serve revision's backend (circuit breakers; the rest queued in its connection pool; closed loop only)", limit4)}
}
