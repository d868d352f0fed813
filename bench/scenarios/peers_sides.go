package main

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// peerSide is one way of reaching the backend in the peers scenario, with
// the proxy processes whose CPU it is charged.
type peerSide struct {
	name, description string
	t                 *target
	procs             []namedPid
	failed            string
}

// namedPid is a process whose CPU a side is charged.
type namedPid struct {
	name string
	pid  int
}

// interleavedRate sends rate requests/s in all for d in one vegeta attack
// whose targeter cycles through ts request by request (rate/len(ts) per
// target), so every side meets the same moment-to-moment conditions of the
// machine. Results are told apart by URL and added to ss[i] when ss is not
// nil (nil: warm-up).
func interleavedRate(ts []*target, rate int, d time.Duration, ss []*sample) {
	vts := make([]vegeta.Target, len(ts))
	byURL := make(map[string]int, len(ts))
	for i, t := range ts {
		vts[i] = vegeta.Target{Method: http.MethodGet, URL: t.url, Header: http.Header{"Host": []string{t.host}}}
		byURL[t.url] = i
	}
	atk := ts[0].attacker(vegeta.Workers(uint64(max(rate/25, 10))))
	var m vegeta.Metrics
	for r := range atk.Attack(vegeta.NewStaticTargeter(vts...), vegeta.Rate{Freq: rate, Per: time.Second}, d, "peers") {
		m.Add(r)
		if i, ok := byURL[r.URL]; ok && ss != nil {
			ss[i].add(r)
		}
	}
	m.Close()
	for _, s := range ss {
		s.sentSpan += m.Duration
	}
}

// frontRoute is one virtual host of the peers' front Envoy.
type frontRoute struct {
	host, cluster string
	port          int
}

// frontBootstrap is the plain Envoy in front of every peer, as Knative and
// KEDA deploy them behind an ingress: listener "peers_http" (port chosen by
// Envoy) routing by Host to one static cluster per route, with the static
// baseline's circuit-breaker limits.
func frontBootstrap(routes []frontRoute) string {
	var vhosts, clusters strings.Builder
	for _, r := range routes {
		fmt.Fprintf(&vhosts, `            - name: %[1]s
              domains: [%[2]q]
              routes:
              - match: {prefix: "/"}
                route: {cluster: %[1]s}
`, r.cluster, r.host)
		fmt.Fprintf(&clusters, `  - name: %[1]s
    type: STATIC
    connect_timeout: 1s
    circuit_breakers:
      thresholds:
      - {max_connections: 100000, max_pending_requests: 100000, max_requests: 100000}
    load_assignment:
      cluster_name: %[1]s
      endpoints:
      - lb_endpoints:
        - endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: %[2]d}}}
`, r.cluster, r.port)
	}
	return fmt.Sprintf(`admin:
  address: {socket_address: {address: 127.0.0.1, port_value: 0}}
static_resources:
  listeners:
  - name: peers_http
    address: {socket_address: {address: 127.0.0.1, port_value: 0}}
    filter_chains:
    - filters:
      - name: envoy.filters.network.http_connection_manager
        typed_config:
          "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
          stat_prefix: peers_http
          route_config:
            name: peers
            virtual_hosts:
%s          http_filters:
          - name: envoy.filters.http.router
            typed_config:
              "@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router
  clusters:
%s`, vhosts.String(), clusters.String())
}
