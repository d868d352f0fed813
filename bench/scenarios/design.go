package main

import (
	"fmt"
	"net"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"google.golang.org/grpc"

	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/thaw-dev/thaw/extproc"
	"github.com/thaw-dev/thaw/xds/translate"
)

// runDesign (bench only, -only design) compares two ways of putting the
// activator in a revision's path, in one static Envoy that calls thaw's own
// ext_proc server (thaw local, revision "proxy" with one warm backend):
//
//	direct  route → the backend (serve mode)
//	hdr     direct, plus the x-thaw-revision removal and addition thaw's
//	        serve-mode routes do (the warm path's header work)
//	il      route → cluster whose endpoint is the internal listener
//	        thaw_activator (HCM + ext_proc + router → thaw_activator_dst):
//	        thaw's design today
//	ilk     il through an internal listener whose HCM generates no request
//	        id and whose router adds no x-envoy-* headers
//	rt      route → thaw_activator_dst, with the ext_proc filter of the
//	        outer HCM enabled for this route only (ExtProcPerRoute); the
//	        revision goes to thaw as gRPC metadata of the route's override
//	floor   rt, but the route's override sends the ext_proc stream to a
//	        do-nothing processor in this process (floorProcessor): every
//	        stream gets thaw's answer for the backend at once. Envoy's CPU
//	        per request here is what one ext_proc round trip costs Envoy
//	        whatever the processor does: the floor of any activator path
//	        built on ext_proc
//
// Each side: latency at the constant rate (sides back to back, order
// rotating), throughput with 16 in flight, and CPU per request of thaw and
// of the static Envoy from /proc. The figures go to the log and to
// <out dir>/design.json; docs/activator.md records them.
func runDesign(e *env, outDir string) error {
	dir, err := e.tempDir("design")
	if err != nil {
		return err
	}
	one := map[string]string{"min-scale": "1", "max-scale": "1", "initial-scale": "1"}
	proxyRev := rev{name: "proxy", autoscaling: with(one, "target-burst-capacity", "-1")}
	th, backendPort, err := startOneBackend(e, dir, proxyRev, "proxy")
	if err != nil {
		return err
	}
	defer e.stopLogged(th.process)
	floorPort, stopFloor, err := startFloorProcessor(fmt.Sprintf("127.0.0.1:%d", backendPort))
	if err != nil {
		return err
	}
	defer stopFloor()
	bootstrap, err := designBootstrap(backendPort, th.grpcPort, floorPort, "local/"+proxyRev.name)
	if err != nil {
		return err
	}
	ev, err := startEnvoy(e, dir, "design envoy", "design-envoy", bootstrap)
	if err != nil {
		return err
	}
	defer e.stopLogged(ev.process)
	base := ev.url("design_http")
	return compareSides(e, "design", outDir, func(string) string { return base }, []string{"direct", "hdr", "il", "ilk", "rt", "floor"}, th.Pid(), ev.Pid())
}

// designBootstrap is the static Envoy of runDesign; the ext_proc filter is
// thaw's own (translate.ExtProcFilter), disabled on the outer HCM except on the
// rt route.
func designBootstrap(backendPort, extprocPort, floorPort int, revision string) (string, error) {
	f, err := translate.ExtProcFilter(&translate.Config{ExtProcMessageTimeout: translate.DefaultExtProcMessageTimeout, HoldBudget: translate.DefaultHoldBudget})
	if err != nil {
		return "", err
	}
	inner, err := protojson.Marshal(f)
	if err != nil {
		return "", err
	}
	outerF := proto.Clone(f).(*hcmv3.HttpFilter)
	outerF.Disabled = true
	outer, err := protojson.Marshal(outerF)
	if err != nil {
		return "", err
	}
	budget := fmt.Sprintf("%.0fs", translate.DefaultHoldBudget.Seconds())
	return fmt.Sprintf(`admin:
  address: {socket_address: {address: 127.0.0.1, port_value: 0}}
bootstrap_extensions:
- name: envoy.bootstrap.internal_listener
  typed_config: {"@type": type.googleapis.com/envoy.extensions.bootstrap.internal_listener.v3.InternalListener}
static_resources:
  listeners:
  - name: design_http
    address: {socket_address: {address: 127.0.0.1, port_value: 0}}
    filter_chains:
    - filters:
      - name: envoy.filters.network.http_connection_manager
        typed_config:
          "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
          stat_prefix: design_http
          route_config:
            virtual_hosts:
            - name: direct
              domains: ["direct.bench"]
              routes:
              - match: {prefix: "/"}
                route: {cluster: backend}
            - name: hdr
              domains: ["hdr.bench"]
              routes:
              - match: {prefix: "/"}
                route: {cluster: backend}
                request_headers_to_remove: [x-thaw-revision]
                request_headers_to_add:
                - header: {key: x-thaw-revision, value: %[3]s}
                  append_action: OVERWRITE_IF_EXISTS_OR_ADD
            - name: il
              domains: ["il.bench"]
              routes:
              - match: {prefix: "/"}
                route: {cluster: rev_il, timeout: 0s}
                request_headers_to_remove: [x-thaw-revision]
                request_headers_to_add:
                - header: {key: x-thaw-revision, value: %[3]s}
                  append_action: OVERWRITE_IF_EXISTS_OR_ADD
            - name: ilk
              domains: ["ilk.bench"]
              routes:
              - match: {prefix: "/"}
                route: {cluster: rev_ilk, timeout: 0s}
                request_headers_to_remove: [x-thaw-revision]
                request_headers_to_add:
                - header: {key: x-thaw-revision, value: %[3]s}
                  append_action: OVERWRITE_IF_EXISTS_OR_ADD
            - name: rt
              domains: ["rt.bench"]
              routes:
              - match: {prefix: "/"}
                route: {cluster: thaw_activator_dst, timeout: 0s, idle_timeout: %[6]s}
                request_headers_to_remove: [x-thaw-revision]
                request_headers_to_add:
                - header: {key: x-thaw-revision, value: %[3]s}
                  append_action: OVERWRITE_IF_EXISTS_OR_ADD
                typed_per_filter_config:
                  envoy.filters.http.ext_proc:
                    "@type": type.googleapis.com/envoy.config.route.v3.FilterConfig
                    config:
                      "@type": type.googleapis.com/envoy.extensions.filters.http.ext_proc.v3.ExtProcPerRoute
                      overrides:
                        grpc_initial_metadata: [{key: x-thaw-revision, value: %[3]s}]
            - name: floor
              domains: ["floor.bench"]
              routes:
              - match: {prefix: "/"}
                route: {cluster: thaw_activator_dst, timeout: 0s, idle_timeout: %[6]s}
                typed_per_filter_config:
                  envoy.filters.http.ext_proc:
                    "@type": type.googleapis.com/envoy.config.route.v3.FilterConfig
                    config:
                      "@type": type.googleapis.com/envoy.extensions.filters.http.ext_proc.v3.ExtProcPerRoute
                      overrides:
                        grpc_service: {envoy_grpc: {cluster_name: floor_extproc}}
          http_filters:
          - %[5]s
          - name: envoy.filters.http.router
            typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}
  - name: thaw_activator
    internal_listener: {}
    filter_chains:
    - filters:
      - name: envoy.filters.network.http_connection_manager
        typed_config:
          "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
          stat_prefix: thaw_activator
          route_config:
            virtual_hosts:
            - name: all
              domains: ["*"]
              routes:
              - match: {prefix: "/"}
                route: {cluster: thaw_activator_dst, timeout: 0s, idle_timeout: %[6]s}
          http_filters:
          - %[4]s
          - name: envoy.filters.http.router
            typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}
  - name: thaw_activator_k
    internal_listener: {}
    filter_chains:
    - filters:
      - name: envoy.filters.network.http_connection_manager
        typed_config:
          "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
          stat_prefix: thaw_activator_k
          generate_request_id: false
          route_config:
            virtual_hosts:
            - name: all
              domains: ["*"]
              routes:
              - match: {prefix: "/"}
                route: {cluster: thaw_activator_dst, timeout: 0s, idle_timeout: %[6]s}
          http_filters:
          - %[4]s
          - name: envoy.filters.http.router
            typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router, suppress_envoy_headers: true}
  clusters:
  - name: rev_ilk
    type: STATIC
    connect_timeout: 1s
    circuit_breakers: {thresholds: [{max_connections: 100000, max_pending_requests: 100000, max_requests: 100000}]}
    load_assignment:
      cluster_name: rev_ilk
      endpoints: [{lb_endpoints: [{endpoint: {address: {envoy_internal_address: {server_listener_name: thaw_activator_k}}}}]}]
    transport_socket:
      name: envoy.transport_sockets.internal_upstream
      typed_config:
        "@type": type.googleapis.com/envoy.extensions.transport_sockets.internal_upstream.v3.InternalUpstreamTransport
        transport_socket:
          name: envoy.transport_sockets.raw_buffer
          typed_config: {"@type": type.googleapis.com/envoy.extensions.transport_sockets.raw_buffer.v3.RawBuffer}
  - name: backend
    type: STATIC
    connect_timeout: 1s
    circuit_breakers: {thresholds: [{max_connections: 100000, max_pending_requests: 100000, max_requests: 100000}]}
    load_assignment:
      cluster_name: backend
      endpoints: [{lb_endpoints: [{endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: %[1]d}}}}]}]
  - name: rev_il
    type: STATIC
    connect_timeout: 1s
    circuit_breakers: {thresholds: [{max_connections: 100000, max_pending_requests: 100000, max_requests: 100000}]}
    load_assignment:
      cluster_name: rev_il
      endpoints: [{lb_endpoints: [{endpoint: {address: {envoy_internal_address: {server_listener_name: thaw_activator}}}}]}]
    transport_socket:
      name: envoy.transport_sockets.internal_upstream
      typed_config:
        "@type": type.googleapis.com/envoy.extensions.transport_sockets.internal_upstream.v3.InternalUpstreamTransport
        transport_socket:
          name: envoy.transport_sockets.raw_buffer
          typed_config: {"@type": type.googleapis.com/envoy.extensions.transport_sockets.raw_buffer.v3.RawBuffer}
  - name: thaw_activator_dst
    type: ORIGINAL_DST
    lb_policy: CLUSTER_PROVIDED
    connect_timeout: 1s
    circuit_breakers: {thresholds: [{max_connections: 100000, max_pending_requests: 100000, max_requests: 100000}]}
    original_dst_lb_config:
      use_http_header: false
      metadata_key: {key: thaw.activator, path: [{key: destination}]}
%[7]s%[8]s`, backendPort, extprocPort, revision, inner, outer, budget,
		grpcClusterYAML("thaw_extproc", extprocPort), grpcClusterYAML("floor_extproc", floorPort)), nil
}

// grpcClusterYAML is a static bootstrap's HTTP/2 cluster named name with
// one endpoint, 127.0.0.1:port (a list item under clusters:).
func grpcClusterYAML(name string, port int) string {
	return fmt.Sprintf(`  - name: %[1]s
    type: STATIC
    connect_timeout: 1s
    typed_extension_protocol_options:
      envoy.extensions.upstreams.http.v3.HttpProtocolOptions:
        "@type": type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions
        explicit_http_config: {http2_protocol_options: {}}
    circuit_breakers: {thresholds: [{max_connections: 100000, max_pending_requests: 100000, max_requests: 100000}]}
    load_assignment:
      cluster_name: %[1]s
      endpoints: [{lb_endpoints: [{endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: %[2]d}}}}]}]
`, name, port)
}

// floorProcessor answers every ext_proc stream's first message with one
// prebuilt answer (thaw's own, extproc.RouteAnswer, naming the backend,
// short mode) and ends the stream: no revision lookup, no balancing, no
// metrics.
type floorProcessor struct {
	extprocv3.UnimplementedExternalProcessorServer
	answer *extprocv3.ProcessingResponse
}

func (f *floorProcessor) Process(st extprocv3.ExternalProcessor_ProcessServer) error {
	if _, err := st.Recv(); err != nil {
		return err
	}
	return st.Send(f.answer)
}

// startFloorProcessor serves floorProcessor on a loopback port with thaw's
// gRPC server options; stop ends it.
func startFloorProcessor(backend string) (port int, stop func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, nil, fmt.Errorf("floor processor: %w", err)
	}
	g := grpc.NewServer(extproc.GRPCServerOptions()...)
	extprocv3.RegisterExternalProcessorServer(g, &floorProcessor{answer: extproc.RouteAnswer(backend, true)})
	go func() { _ = g.Serve(ln) }()
	return ln.Addr().(*net.TCPAddr).Port, g.Stop, nil
}
