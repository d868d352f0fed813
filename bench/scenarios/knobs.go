package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// runKnobs (bench only, -only knobs) attributes what thaw's serve mode
// costs a warm request against a minimal Envoy, part by part, bootstrap
// included. Every side routes to the same backend (a serve revision's
// process started by thaw local) through an Envoy process of its own, so
// each side's Envoy CPU per request can be read from /proc while it runs
// at the same moment as the baseline (pairedCPU):
//
//	static     the baseline: the paths scenario's minimal static Envoy
//	           (listener, route, cluster)
//	thaw       what thaw's translation sent for a serve-mode revision
//	           before issue 27 (HCM options, route timeouts, retry policy,
//	           revision header removal and addition, least-request cluster
//	           with the internal_upstream transport socket), in a bare
//	           bootstrap
//	nohcm      thaw without its HCM options (use_remote_address, host
//	           normalisation, upgrades, HTTP/1.0, CONNECT)
//	noretry    thaw without the route's retry policy
//	retrybare  thaw's retry policy without its host predicate and
//	           priority (what those two cost)
//	nohdr      thaw without the x-thaw-revision removal and addition
//	norm       thaw without the removal (the overwriting addition stays)
//	notimeout  thaw without the route's timeouts
//	nosock     thaw without the internal_upstream transport socket
//	nocluster  thaw with the baseline's cluster (round robin, no
//	           transport socket)
//	lean       what thaw's translation sends now (xds/translate/route.go,
//	           xds/cluster.go)
//	sstatic    static in a bootstrap with thaw's stats settings
//	           (envoy/stats-sink.yaml: 1 s flush to a metrics_service sink,
//	           thaw's own statsink, and the stats matcher)
//	slean      lean in that bootstrap
//	bstatic    static in a bootstrap with thaw's stats settings and the
//	           rest of thaw's bootstrap (internal listener extension,
//	           runtime layers, deferred stats and cluster creation,
//	           overload manager)
//	blean      lean in that bootstrap
//	serve      thaw's own Envoy (ADS, VHDS, EDS, the activator listener
//	           beside it: everything)
//
// Envoy CPU per request, from /proc while the side and the baseline share
// one constant-rate attack (pairedCPU), is the figure to read; latency
// ratios are only meaningful on a quiet machine and are not taken here. The figures go to the log and <out dir>/knobs.json;
// docs/BENCHMARKS.md ("Where a warm request's Envoy CPU goes") records
// them.
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
	thawEnvoy, err := childNamed(th.Pid(), "envoy")
	if err != nil {
		return err
	}
	sinkYAML, err := os.ReadFile(filepath.Join(e.root, "envoy", "stats-sink.yaml"))
	if err != nil {
		return err
	}
	stats := knobStatsCluster(th.grpcPort)
	sink := knobBoot{top: "node: {id: knobs-sink, cluster: bench}\n" + string(sinkYAML), clusters: stats}
	boot := knobBoot{top: string(sinkYAML) + knobBootRest, clusters: stats}
	names := []string{"static", "thaw", "nohcm", "noretry", "retrybare", "nohdr", "norm", "notimeout", "nosock", "nocluster", "lean",
		"sstatic", "slean", "bstatic", "blean"}
	sides := append(names[1:], "serve")
	if e.knobSides != "" {
		sides = strings.Split(e.knobSides, ",")
		names = append([]string{"static"}, slices.DeleteFunc(slices.Clone(sides), func(s string) bool { return s == "serve" })...)
	}
	urls, pids := map[string]string{"serve": th.httpURL}, map[string]int{"serve": thawEnvoy}
	for _, s := range names {
		var kb knobBoot
		switch s {
		case "sstatic", "slean":
			kb = sink
		case "bstatic", "blean":
			kb = boot
		}
		p, err := startEnvoy(e, dir, "knobs envoy "+s, "knobs-"+s, knobsBootstrap(backendPort, []string{s}, kb))
		if err != nil {
			return err
		}
		defer e.stopLogged(p.process)
		urls[s], pids[s] = p.url("knob_"+s), p.Pid()
	}
	at := func(s string) (string, int) { return urls[s], pids[s] }
	_, err = pairedCPU(e, "knobs", outDir, "static", sides, at, e.size(8, 1), 2000)
	return err
}

// knobBoot is what a knobs Envoy's bootstrap adds to the bare one:
// top-level keys and static clusters.
type knobBoot struct{ top, clusters string }

// knobBootRest is the rest of thaw's bootstrap (envoy/bootstrap.yaml)
// beside its stats settings and ADS.
const knobBootRest = `
node: {id: knobs-boot, cluster: bench}
bootstrap_extensions:
- name: envoy.bootstrap.internal_listener
  typed_config: {"@type": type.googleapis.com/envoy.extensions.bootstrap.internal_listener.v3.InternalListener}
layered_runtime:
  layers:
  - {name: static, static_layer: {}}
  - {name: admin, admin_layer: {}}
deferred_stat_options: {enable_deferred_creation_stats: true}
cluster_manager: {enable_deferred_cluster_creation: true}
overload_manager:
  resource_monitors:
  - name: envoy.resource_monitors.global_downstream_max_connections
    typed_config:
      "@type": type.googleapis.com/envoy.extensions.resource_monitors.downstream_connections.v3.DownstreamConnectionsConfig
      max_active_downstream_connections: 100000
`

// knobStatsCluster is cluster thaw_stats (HTTP/2 to thaw's gRPC port), as
// thaw's bootstrap has it.
func knobStatsCluster(port int) string {
	return fmt.Sprintf(`  - name: thaw_stats
    type: STATIC
    connect_timeout: 5s
    typed_extension_protocol_options:
      envoy.extensions.upstreams.http.v3.HttpProtocolOptions:
        "@type": type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions
        explicit_http_config: {http2_protocol_options: {connection_keepalive: {interval: 30s, timeout: 5s}}}
    load_assignment:
      cluster_name: thaw_stats
      endpoints: [{lb_endpoints: [{endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: %d}}}}]}]
`, port)
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
	knobRetryBare = `
                  retry_policy:
                    retry_on: connect-failure,refused-stream,reset-before-request,retriable-headers
                    num_retries: 8
                    retry_back_off: {base_interval: 0.01s, max_interval: 1s}
                    retriable_headers: [{name: x-thaw-activator-unavailable, present_match: true}]`
	knobRemove = `
                request_headers_to_remove: [x-thaw-revision]`
	knobHeaders = `
                request_headers_to_add:
                - header: {key: x-thaw-revision, value: local/serve}
                  append_action: OVERWRITE_IF_EXISTS_OR_ADD`
	knobCluster = `    lb_policy: LEAST_REQUEST
`
	knobSocket = `    transport_socket:
      name: envoy.transport_sockets.internal_upstream
      typed_config:
        "@type": type.googleapis.com/envoy.extensions.transport_sockets.internal_upstream.v3.InternalUpstreamTransport
        transport_socket:
          name: envoy.transport_sockets.raw_buffer
          typed_config: {"@type": type.googleapis.com/envoy.extensions.transport_sockets.raw_buffer.v3.RawBuffer}
`
)

// knobRoute is the route part of a knobs side: its HCM options, cluster,
// route timeouts, retry policy, header removal and addition.
type knobRoute struct{ hcm, cluster, timeouts, retry, remove, hdr string }

// knobSide returns side s's configuration (see runKnobs); ok is false for
// the minimal listener (static, sstatic, bstatic).
func knobSide(s string) (r knobRoute, ok bool) {
	thaw := knobRoute{knobHCM, "thaw", knobTimeouts, knobRetry, knobRemove, knobHeaders}
	lean := thaw
	lean.cluster, lean.remove = "lean", ""
	switch s {
	case "static", "sstatic", "bstatic":
		return knobRoute{cluster: "plain"}, false
	case "thaw":
	case "nohcm":
		thaw.hcm = ""
	case "noretry":
		thaw.retry = ""
	case "retrybare":
		thaw.retry = knobRetryBare
	case "nohdr":
		thaw.remove, thaw.hdr = "", ""
	case "norm":
		thaw.remove = ""
	case "notimeout":
		thaw.timeouts = ""
	case "nosock":
		thaw.cluster = "lean"
	case "nocluster":
		thaw.cluster = "plain"
	default: // lean, slean, blean
		return lean, true
	}
	return thaw, true
}

// knobsBootstrap renders a knobs Envoy: boot's top-level keys, one
// listener knob_<side> per side (Envoy picks the ports), and the clusters
// "plain" (the baseline's), "thaw" (the revision cluster before issue 27:
// least request and the internal_upstream transport socket) and "lean"
// (least request), all to backendPort, plus boot's clusters.
func knobsBootstrap(backendPort int, sides []string, boot knobBoot) string {
	var b strings.Builder
	b.WriteString(boot.top)
	b.WriteString("\nadmin:\n  address: {socket_address: {address: 127.0.0.1, port_value: 0}}\nstatic_resources:\n  listeners:\n")
	for _, s := range sides {
		r, thawLike := knobSide(s)
		domains := fmt.Sprintf("[%q]", s+".bench")
		if !thawLike {
			domains = `["*"]`
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
                  cluster: %[4]s%[5]s%[6]s%[7]s%[8]s
`, s, r.hcm, domains, r.cluster, r.timeouts, r.retry, r.remove, r.hdr)
		if thawLike {
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
	for _, c := range []struct{ name, extra string }{{"plain", ""}, {"thaw", knobCluster + knobSocket}, {"lean", knobCluster}} {
		fmt.Fprintf(&b, `  - name: %[1]s
    type: STATIC
    connect_timeout: 1s
%[2]s    circuit_breakers: {thresholds: [{max_connections: 100000, max_pending_requests: 100000, max_requests: 100000, max_retries: 100000}]}
    load_assignment:
      cluster_name: %[1]s
      endpoints: [{lb_endpoints: [{endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: %[3]d}}}}]}]
`, c.name, c.extra, backendPort)
	}
	b.WriteString(boot.clusters)
	return b.String()
}
