package main

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// rev is one revision of the local platform file, running the example
// workload.
type rev struct {
	name         string
	startupDelay time.Duration
	latency      time.Duration
	autoscaling  map[string]string
}

func (r rev) host() string { return r.name + ".bench" }

// localConfig renders the `thaw local` YAML for revs.
func localConfig(workloadBin string, revs ...rev) string {
	var b strings.Builder
	b.WriteString("revisions:\n")
	for _, r := range revs {
		fmt.Fprintf(&b, "  - name: %s\n    hosts: [%s]\n    command: [%q, --port, \"{port}\"]\n", r.name, r.host(), workloadBin)
		fmt.Fprintf(&b, "    env:\n      BODY: hello from %s\n      STARTUP_DELAY: %s\n      LATENCY: %s\n", r.name, r.startupDelay, r.latency)
		b.WriteString("    readiness:\n      path: /healthz\n      period: 1s\n    stopTimeout: 5s\n")
		writeAutoscaling(&b, r.autoscaling)
	}
	return b.String()
}

// staticEnvoyBootstrap is the baseline: a plain Envoy whose only listener
// routes every request to one backend, with the same circuit-breaker
// limits thaw's clusters get. No xDS, no ext_proc, no stats sink.
func staticEnvoyBootstrap(backendPort int) string {
	return staticBootstrap("static_http", backendPort, false)
}

// h2cClusterOptions makes a static cluster speak HTTP/2 with prior
// knowledge.
const h2cClusterOptions = `    typed_extension_protocol_options:
      envoy.extensions.upstreams.http.v3.HttpProtocolOptions:
        "@type": type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions
        explicit_http_config:
          http2_protocol_options: {}
`

// staticBootstrap is a plain Envoy bootstrap: listener name on listenPort
// routing everything to one backend cluster (HTTP/1.1, or h2c when h2c);
// Envoy picks the listener's and admin's ports (startEnvoy reads them).
func staticBootstrap(name string, backendPort int, h2c bool) string {
	opts := ""
	if h2c {
		opts = h2cClusterOptions
	}
	return fmt.Sprintf(`admin:
  address: {socket_address: {address: 127.0.0.1, port_value: 0}}
static_resources:
  listeners:
  - name: %[2]s
    address: {socket_address: {address: 127.0.0.1, port_value: 0}}
    filter_chains:
    - filters:
      - name: envoy.filters.network.http_connection_manager
        typed_config:
          "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
          stat_prefix: %[2]s
          route_config:
            name: static
            virtual_hosts:
            - name: backend
              domains: ["*"]
              routes:
              - match: {prefix: "/"}
                route: {cluster: backend}
          http_filters:
          - name: envoy.filters.http.router
            typed_config:
              "@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router
  clusters:
  - name: backend
    type: STATIC
    connect_timeout: 1s
%[3]s    circuit_breakers:
      thresholds:
      - {max_connections: 100000, max_pending_requests: 100000, max_requests: 100000}
    load_assignment:
      cluster_name: backend
      endpoints:
      - lb_endpoints:
        - endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: %[1]d}}}
`, backendPort, name, opts)
}

// staticEnvoy is the running baseline Envoy.
type staticEnvoy struct {
	*process
	httpURL string
}

// startStaticEnvoy runs the baseline Envoy with the same worker count as
// thaw's and waits for its admin /ready.
func startStaticEnvoy(e *env, dir string, backendPort int) (*staticEnvoy, error) {
	ev, err := startEnvoy(e, dir, "static envoy", "static-envoy", staticEnvoyBootstrap(backendPort))
	if err != nil {
		return nil, err
	}
	return &staticEnvoy{process: ev.process, httpURL: ev.url("static_http")}, nil
}

// writeAutoscaling appends a revision's autoscaling map to a local config,
// keys sorted; nothing when it is empty.
func writeAutoscaling(b *strings.Builder, settings map[string]string) {
	if len(settings) == 0 {
		return
	}
	b.WriteString("    autoscaling:\n")
	keys := make([]string, 0, len(settings))
	for k := range settings {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(b, "      %s: %q\n", k, settings[k])
	}
}
