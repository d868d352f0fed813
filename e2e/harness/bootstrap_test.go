package harness

import (
	"testing"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"sigs.k8s.io/yaml"

	// The types the bootstrap's typed_configs name.
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/bootstrap/internal_listener/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
)

// TestStaticBootstrapIsEnvoyBootstrap reads String's YAML back as Envoy's
// own Bootstrap message (unknown fields refused) and validates it, so a
// wrong indentation or field fails here rather than in a slow e2e test.
func TestStaticBootstrapIsEnvoyBootstrap(t *testing.T) {
	b := StaticBootstrap{
		NodeID:            "e2e-node",
		InternalListeners: true,
		Listeners: []HTTPListener{
			{Name: "front", Port: 10080, RouteConfigName: "front_routes", VirtualHosts: []string{
				CatchAll("all", "{cluster: backend, timeout: 0s}"),
				VirtualHost("other", []string{"other.example", "*.other.example"},
					"match: {prefix: \"/a\"}\nroute: {cluster: backend}",
					"match: {prefix: \"/\"}\nroute:\n  cluster: grpc\n  timeout: 0s"),
			}},
			{Name: "inner", Internal: true, VirtualHosts: []string{CatchAll("all", "{cluster: backend}")}},
		},
		Clusters: []string{StaticCluster("backend", 10081), GRPCCluster("grpc", 10082)},
		Tail:     "stats_flush_interval: 1s",
	}
	js, err := yaml.YAMLToJSON([]byte(b.String()))
	if err != nil {
		t.Fatalf("not YAML: %v\n%s", err, b)
	}
	var got bootstrapv3.Bootstrap
	if err := protojson.Unmarshal(js, &got); err != nil {
		t.Fatalf("not an Envoy bootstrap: %v\n%s", err, b)
	}
	if err := got.ValidateAll(); err != nil {
		t.Fatalf("invalid bootstrap: %v\n%s", err, b)
	}
	if got.GetNode().GetId() != "e2e-node" || got.GetStatsFlushInterval().AsDuration().Seconds() != 1 || len(got.GetBootstrapExtensions()) != 1 {
		t.Errorf("node %v, flush %v, extensions %d: want e2e-node, 1s, 1", got.GetNode(), got.GetStatsFlushInterval(), len(got.GetBootstrapExtensions()))
	}
	ls := got.GetStaticResources().GetListeners()
	if len(ls) != 2 || ls[0].GetAddress().GetSocketAddress().GetPortValue() != 10080 || ls[1].GetInternalListener() == nil {
		t.Fatalf("listeners %v: want front on 10080 and inner internal", ls)
	}
	var hcm hcmv3.HttpConnectionManager
	if err := ls[0].GetFilterChains()[0].GetFilters()[0].GetTypedConfig().UnmarshalTo(&hcm); err != nil {
		t.Fatal(err)
	}
	vhs := hcm.GetRouteConfig().GetVirtualHosts()
	if hcm.GetStatPrefix() != "front" || hcm.GetRouteConfig().GetName() != "front_routes" || len(vhs) != 2 || vhs[0].GetRoutes()[0].GetRoute().GetCluster() != "backend" ||
		len(vhs[1].GetDomains()) != 2 || len(vhs[1].GetRoutes()) != 2 || vhs[1].GetRoutes()[1].GetRoute().GetCluster() != "grpc" {
		t.Errorf("front's HCM: %v", &hcm)
	}
	if fs := hcm.GetHttpFilters(); len(fs) != 1 || fs[0].GetName() != "envoy.filters.http.router" {
		t.Errorf("front's filters %v: want the router alone", fs)
	}
	cs := got.GetStaticResources().GetClusters()
	if len(cs) != 2 || cs[0].GetName() != "backend" || cs[1].GetTypedExtensionProtocolOptions() == nil {
		t.Errorf("clusters %v: want backend, then grpc with HTTP/2 options", cs)
	}
}
