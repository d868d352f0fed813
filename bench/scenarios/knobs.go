package main

import (
	"fmt"
	"strings"
)

// runKnobs (bench only, -only knobs) looks for what thaw's serve-mode
// configuration costs a warm request against a minimal Envoy: one static
// Envoy whose listeners route to the same backend (a serve revision's
// process started by thaw local), each with one part of thaw's
// configuration removed:
//
//	static     the baseline of the paths scenario (minimal listener,
//	           route and cluster)
//	thaw       what thaw's translation sends for a serve-mode revision
//	           (HCM options, route timeouts, retry policy, revision
//	           header, least-request cluster)
//	nohcm      thaw without its HCM options (use_remote_address, host
//	           normalisation, upgrades, HTTP/1.0, CONNECT)
//	noretry    thaw without the route's retry policy
//	nohdr      thaw without the x-thaw-revision removal and addition
//	nocluster  thaw with the baseline's cluster (round robin instead of
//	           least request, the only difference left)
//
// The shapes mirror xds/route.go, xds/cluster.go and xds/listener.go; the
// figures go to the log and <out dir>/knobs.json, and docs/activator.md
// records them.
func runKnobs(e *env, outDir string) error {
	dir, err := e.tempDir("knobs")
	if err != nil {
		return err
	}
	one := map[string]string{"min-scale": "1", "max-scale": "1", "initial-scale": "1", "target-burst-capacity": "0"}
	serveRev := rev{name: "serve", autoscaling: one}
	th, backendPort, err := startOneBackend(e, dir, serveRev, "serve")
	if err != nil {
		return err
	}
	defer e.stopLogged(th.process)
	names := []string{"static", "thaw", "nohcm", "noretry", "nohdr", "nocluster"}
	ev, err := startEnvoy(e, dir, "knobs envoy", "knobs-envoy", knobsBootstrap(backendPort, names))
	if err != nil {
		return err
	}
	defer e.stopLogged(ev.process)
	return compareSides(e, "knobs", outDir, func(side string) string { return ev.url("knob_" + side) }, names, 0, ev.Pid())
}

// Parts of thaw's serve-mode configuration, in the shapes xds sends.
const (
	knobHCM = `          use_remote_address: true
          strip_any_host_port: true
          strip_trailing_host_dot: true
          http_protocol_options: {accept_http_10: true}
          http2_protocol_options: {allow_connect: true}
          upgrade_configs: [{upgrade_type: websocket}]
`
	knobTimeouts = `
                  timeout: 360s
                  idle_timeout: 0s`
	knobRetry = `
                  retry_policy:
                    retry_on: connect-failure,refused-stream,reset-before-request,retriable-headers
                    num_retries: 8
                    retry_priority:
                      name: envoy.retry_priorities.previous_priorities
                      typed_config: {"@type": type.googleapis.com/envoy.extensions.retry.priority.previous_priorities.v3.PreviousPrioritiesConfig, update_frequency: 1}
                    retry_host_predicate:
                    - name: envoy.retry_host_predicates.previous_hosts
                      typed_config: {"@type": type.googleapis.com/envoy.extensions.retry.host.previous_hosts.v3.PreviousHostsPredicate}
                    host_selection_retry_max_attempts: 3
                    retry_back_off: {base_interval: 0.01s, max_interval: 1s}
                    retriable_headers: [{name: x-thaw-activator-unavailable, present_match: true}]`
	knobHeaders = `
                request_headers_to_remove: [x-thaw-revision]
                request_headers_to_add:
                - header: {key: x-thaw-revision, value: local/serve}
                  append_action: OVERWRITE_IF_EXISTS_OR_ADD`
	knobCluster = `    lb_policy: LEAST_REQUEST
`
)

// knobsBootstrap renders runKnobs' Envoy: one listener knob_<side> per
// side (Envoy picks the ports), and the clusters "plain" (the baseline's)
// and "thaw" (thaw's revision cluster shape), both to backendPort.
func knobsBootstrap(backendPort int, sides []string) string {
	var b strings.Builder
	b.WriteString("admin:\n  address: {socket_address: {address: 127.0.0.1, port_value: 0}}\nstatic_resources:\n  listeners:\n")
	for _, s := range sides {
		hcm, timeouts, retry, hdr, cluster := knobHCM, knobTimeouts, knobRetry, knobHeaders, "thaw"
		domains, notFound := fmt.Sprintf("[%q]", s+".bench"), true
		switch s {
		case "static":
			hcm, timeouts, retry, hdr, cluster, domains, notFound = "", "", "", "", "plain", `["*"]`, false
		case "nohcm":
			hcm = ""
		case "noretry":
			retry = ""
		case "nohdr":
			hdr = ""
		case "nocluster":
			cluster = "plain"
		}
		fmt.Fprintf(&b, `  - name: knob_%[1]s
    address: {socket_address: {address: 127.0.0.1, port_value: 0}}
    filter_chains:
    - filters:
      - name: envoy.filters.network.http_connection_manager
        typed_config:
          "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
          stat_prefix: knob_%[1]s
%[2]s          route_config:
            virtual_hosts:
            - name: %[1]s
              domains: %[3]s
              routes:
              - match: {prefix: "/"}
                route:
                  cluster: %[4]s%[5]s%[6]s%[7]s
`, s, hcm, domains, cluster, timeouts, retry, hdr)
		if notFound {
			b.WriteString(`            - name: not_found
              domains: ["*"]
              routes: [{match: {prefix: "/"}, direct_response: {status: 404}}]
`)
		}
		b.WriteString(`          http_filters:
          - name: envoy.filters.http.router
            typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}
`)
	}
	b.WriteString("  clusters:\n")
	for _, c := range []struct{ name, extra string }{{"plain", ""}, {"thaw", knobCluster}} {
		fmt.Fprintf(&b, `  - name: %[1]s
    type: STATIC
    connect_timeout: 1s
%[2]s    circuit_breakers: {thresholds: [{max_connections: 100000, max_pending_requests: 100000, max_requests: 100000, max_retries: 100000}]}
    load_assignment:
      cluster_name: %[1]s
      endpoints: [{lb_endpoints: [{endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: %[3]d}}}}]}]
`, c.name, c.extra, backendPort)
	}
	return b.String()
}
