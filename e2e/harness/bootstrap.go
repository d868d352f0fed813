package harness

import (
	"fmt"
	"strings"
)

// StaticBootstrap is a static Envoy bootstrap (no xDS) for tests and
// bench/: HTTP listeners, each one HTTP connection manager ending in the
// router, and clusters, rendered as YAML by String. Fields that hold YAML
// take it written at column 0; String indents it, so callers never count
// spaces.
type StaticBootstrap struct {
	// NodeID, when set, is the bootstrap's node id (node cluster "thaw").
	NodeID string
	// InternalListeners enables envoy.bootstrap.internal_listener, which an
	// Internal listener and an envoy_internal_address endpoint need.
	InternalListeners bool
	Listeners         []HTTPListener
	// Clusters are static_resources.clusters, each one YAML mapping
	// ("name: ...", see StaticCluster and GRPCCluster).
	Clusters []string
	// Tail is YAML of top-level keys appended as it is (for example
	// envoy/stats-sink.yaml).
	Tail string
}

// HTTPListener is one listener of a StaticBootstrap.
type HTTPListener struct {
	// Name is the listener's name and its HCM's stat_prefix.
	Name string
	// Port is the port on 127.0.0.1; 0 lets Envoy choose (read it back
	// from admin /listeners). Unused when Internal.
	Port int
	// Internal makes it an internal listener (internal_listener: {}).
	Internal bool
	// RouteConfigName, when set, names the route configuration (Envoy's
	// stats of it carry the name).
	RouteConfigName string
	// VirtualHosts are the route configuration's virtual hosts, each one
	// YAML mapping ("name: ...", see CatchAll).
	VirtualHosts []string
	// Filters are the HTTP filters before the router, each one YAML
	// mapping ("name: ...").
	Filters []string
}

// StaticCluster is a cluster named name with one endpoint, 127.0.0.1:port,
// and a connect timeout of 1 s (a YAML mapping for StaticBootstrap.Clusters).
func StaticCluster(name string, port int) string {
	return fmt.Sprintf(`name: %[1]s
type: STATIC
connect_timeout: 1s
load_assignment:
  cluster_name: %[1]s
  endpoints: [{lb_endpoints: [{endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: %[2]d}}}}]}]`, name, port)
}

// GRPCCluster is StaticCluster speaking HTTP/2 (for a gRPC service such as
// thaw's stats sink or ext_proc server).
func GRPCCluster(name string, port int) string {
	return fmt.Sprintf(`name: %[1]s
type: STATIC
connect_timeout: 1s
typed_extension_protocol_options:
  envoy.extensions.upstreams.http.v3.HttpProtocolOptions:
    "@type": type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions
    explicit_http_config: {http2_protocol_options: {}}
load_assignment:
  cluster_name: %[1]s
  endpoints: [{lb_endpoints: [{endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: %[2]d}}}}]}]`, name, port)
}

// CatchAll is a virtual host named name for every domain with one route,
// prefix "/" to route (a YAML flow mapping such as
// `{cluster: backend, timeout: 0s}`).
func CatchAll(name, route string) string {
	return fmt.Sprintf(`name: %s
domains: ["*"]
routes: [{match: {prefix: "/"}, route: %s}]`, name, route)
}

// VirtualHost is a virtual host named name for domains with routes, each
// one YAML mapping ("match: ...").
func VirtualHost(name string, domains []string, routes ...string) string {
	ds := make([]string, len(domains))
	for i, d := range domains {
		ds[i] = fmt.Sprintf("%q", d)
	}
	return fmt.Sprintf("name: %s\ndomains: [%s]\nroutes:\n%s", name, strings.Join(ds, ", "), yamlList(routes, 0))
}

// String renders the bootstrap as YAML.
func (b StaticBootstrap) String() string {
	var s strings.Builder
	if b.NodeID != "" {
		fmt.Fprintf(&s, "node: {id: %s, cluster: thaw}\n", b.NodeID)
	}
	if b.InternalListeners {
		s.WriteString(`bootstrap_extensions:
- name: envoy.bootstrap.internal_listener
  typed_config: {"@type": type.googleapis.com/envoy.extensions.bootstrap.internal_listener.v3.InternalListener}
`)
	}
	s.WriteString("static_resources:\n  listeners:\n")
	for _, l := range b.Listeners {
		s.WriteString(yamlList([]string{l.yaml()}, 2))
	}
	s.WriteString("  clusters:\n")
	s.WriteString(yamlList(b.Clusters, 2))
	if b.Tail != "" {
		s.WriteString(b.Tail)
		if !strings.HasSuffix(b.Tail, "\n") {
			s.WriteString("\n")
		}
	}
	return s.String()
}

// yaml renders the listener as one YAML mapping at column 0.
func (l HTTPListener) yaml() string {
	var s strings.Builder
	fmt.Fprintf(&s, "name: %s\n", l.Name)
	if l.Internal {
		s.WriteString("internal_listener: {}\n")
	} else {
		fmt.Fprintf(&s, "address: {socket_address: {address: 127.0.0.1, port_value: %d}}\n", l.Port)
	}
	fmt.Fprintf(&s, `filter_chains:
- filters:
  - name: envoy.filters.network.http_connection_manager
    typed_config:
      "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
      stat_prefix: %s
      route_config:
`, l.Name)
	if l.RouteConfigName != "" {
		fmt.Fprintf(&s, "        name: %s\n", l.RouteConfigName)
	}
	s.WriteString("        virtual_hosts:\n")
	s.WriteString(yamlList(l.VirtualHosts, 8))
	s.WriteString("      http_filters:\n")
	s.WriteString(yamlList(l.Filters, 6))
	s.WriteString(`      - name: envoy.filters.http.router
        typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}`)
	return s.String()
}

// yamlList renders items (YAML mappings at column 0) as a YAML list whose
// dashes stand indent spaces in.
func yamlList(items []string, indent int) string {
	pad := strings.Repeat(" ", indent)
	var s strings.Builder
	for _, it := range items {
		for i, line := range strings.Split(strings.Trim(it, "\n"), "\n") {
			switch {
			case i == 0:
				s.WriteString(pad + "- " + line + "\n")
			case line == "":
				s.WriteString("\n")
			default:
				s.WriteString(pad + "  " + line + "\n")
			}
		}
	}
	return s.String()
}
