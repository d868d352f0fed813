package envoy

import (
	"errors"
	"strings"
	"testing"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"sigs.k8s.io/yaml"
)

func parse(t *testing.T, y []byte) *bootstrapv3.Bootstrap {
	t.Helper()
	j, err := yaml.YAMLToJSON(y)
	if err != nil {
		t.Fatal(err)
	}
	var b bootstrapv3.Bootstrap
	if err := protojson.Unmarshal(j, &b); err != nil {
		t.Fatal(err)
	}
	return &b
}

func TestRenderBootstrap(t *testing.T) {
	y, err := RenderBootstrap(BootstrapParams{NodeID: `envoy-"1"`, XDSAddress: "127.0.0.1:18000",
		StatsAddress: "thaw-stats.thaw-system.svc:9000", AdminPort: 19901})
	if err != nil {
		t.Fatal(err)
	}
	b := parse(t, y)
	if b.GetNode().GetId() != `envoy-"1"` || b.GetNode().GetCluster() != "thaw" {
		t.Errorf("node = %v", b.GetNode())
	}
	if got := b.GetDynamicResources().GetAdsConfig().GetApiType().String(); got != "DELTA_GRPC" {
		t.Errorf("ads api_type = %s", got)
	}
	want := map[string]struct {
		typ, host string
		port      uint32
	}{
		"thaw_xds":     {"STATIC", "127.0.0.1", 18000},
		"thaw_extproc": {"STATIC", "127.0.0.1", 18000},
		"thaw_stats":   {"STRICT_DNS", "thaw-stats.thaw-system.svc", 9000},
	}
	for _, c := range b.GetStaticResources().GetClusters() {
		w, ok := want[c.GetName()]
		if !ok {
			t.Errorf("unexpected cluster %s", c.GetName())
			continue
		}
		delete(want, c.GetName())
		sa := c.GetLoadAssignment().GetEndpoints()[0].GetLbEndpoints()[0].GetEndpoint().GetAddress().GetSocketAddress()
		if c.GetType().String() != w.typ || sa.GetAddress() != w.host || sa.GetPortValue() != w.port {
			t.Errorf("cluster %s = %s %s:%d, want %+v", c.GetName(), c.GetType(), sa.GetAddress(), sa.GetPortValue(), w)
		}
		if c.GetCircuitBreakers().GetThresholds()[0].GetMaxRequests().GetValue() < 100000 {
			t.Errorf("cluster %s circuit breaker not raised", c.GetName())
		}
		if _, ok := c.GetTypedExtensionProtocolOptions()["envoy.extensions.upstreams.http.v3.HttpProtocolOptions"]; !ok {
			t.Errorf("cluster %s is not HTTP/2", c.GetName())
		}
	}
	if len(want) != 0 {
		t.Errorf("missing clusters %v", want)
	}
	if b.GetAdmin().GetAddress().GetSocketAddress().GetAddress() != "127.0.0.1" ||
		b.GetAdmin().GetAddress().GetSocketAddress().GetPortValue() != 19901 {
		t.Errorf("admin = %v", b.GetAdmin())
	}
	if b.GetStatsFlushInterval().AsDuration().Seconds() != 1 {
		t.Errorf("stats_flush_interval = %v", b.GetStatsFlushInterval())
	}
	if got := b.GetLayeredRuntime().GetLayers()[0].GetStaticLayer().GetFields()["envoy.reloadable_features.ext_proc_stream_close_optimization"]; got != nil {
		t.Errorf("removed runtime guard ext_proc_stream_close_optimization is set (%v): Envoy 1.40 logs an envoy_bug", got)
	}
	if len(b.GetBootstrapExtensions()) != 1 || b.GetBootstrapExtensions()[0].GetName() != "envoy.bootstrap.internal_listener" {
		t.Errorf("bootstrap extensions = %v", b.GetBootstrapExtensions())
	}
	sink := b.GetStatsSinks()
	if len(sink) != 1 || sink[0].GetName() != "envoy.stat_sinks.metrics_service" {
		t.Errorf("stats sinks = %v, want the metrics_service sink", sink)
	}
	if !strings.Contains(string(y), statsSink) {
		t.Error("bootstrap does not carry envoy/stats-sink.yaml verbatim")
	}
	if len(b.GetStatsConfig().GetStatsMatcher().GetInclusionList().GetPatterns()) == 0 {
		t.Error("no stats matcher inclusion list")
	}
}

func TestRenderBootstrapErrors(t *testing.T) {
	tests := []struct {
		name string
		p    BootstrapParams
	}{
		{"no node id", BootstrapParams{XDSAddress: "127.0.0.1:1"}},
		{"no xds address", BootstrapParams{NodeID: "n"}},
		{"no port", BootstrapParams{NodeID: "n", XDSAddress: "127.0.0.1"}},
		{"port zero", BootstrapParams{NodeID: "n", XDSAddress: "127.0.0.1:0"}},
		{"bad extproc", BootstrapParams{NodeID: "n", XDSAddress: "127.0.0.1:1", ExtProcAddress: "x:99999"}},
		{"control char", BootstrapParams{NodeID: "a\nb", XDSAddress: "127.0.0.1:1"}},
		{"admin port", BootstrapParams{NodeID: "n", XDSAddress: "127.0.0.1:1", AdminPort: 70000}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := RenderBootstrap(tt.p); !errors.Is(err, ErrInvalidParams) {
				t.Fatalf("error = %v, want ErrInvalidParams", err)
			}
		})
	}
}

func TestRenderBootstrapModuleBridge(t *testing.T) {
	tlsc := &ClientTLS{CertDir: "/etc/thaw-tls", SDSDir: "/etc/envoy", ServerName: "thaw-grpc.thaw-system.svc"}
	y, err := RenderBootstrap(BootstrapParams{NodeID: "e", XDSAddress: "thaw-grpc.thaw-system.svc:18000", TLS: tlsc,
		Module: &ModuleBridge{Address: "thaw-grpc.thaw-system.svc:18001"}})
	if err != nil {
		t.Fatal(err)
	}
	b := parse(t, y)
	ls := b.GetStaticResources().GetListeners()
	if len(ls) != 1 || ls[0].GetName() != "thaw_module" {
		t.Fatalf("static listeners = %v, want thaw_module", ls)
	}
	sa := ls[0].GetAddress().GetSocketAddress()
	if sa.GetAddress() != "127.0.0.1" || sa.GetPortValue() != DefaultModuleBridgePort {
		t.Errorf("bridge listens on %s:%d, want 127.0.0.1:%d (loopback only)", sa.GetAddress(), sa.GetPortValue(), DefaultModuleBridgePort)
	}
	var mod *clusterv3.Cluster
	for _, c := range b.GetStaticResources().GetClusters() {
		if c.GetName() == "thaw_module" {
			mod = c
		}
	}
	if mod == nil {
		t.Fatal("no cluster thaw_module")
	}
	ep := mod.GetLoadAssignment().GetEndpoints()[0].GetLbEndpoints()[0].GetEndpoint().GetAddress().GetSocketAddress()
	if mod.GetType() != clusterv3.Cluster_STRICT_DNS || ep.GetAddress() != "thaw-grpc.thaw-system.svc" || ep.GetPortValue() != 18001 {
		t.Errorf("thaw_module = %s %s:%d", mod.GetType(), ep.GetAddress(), ep.GetPortValue())
	}
	if mod.GetTransportSocket().GetName() != "envoy.transport_sockets.tls" {
		t.Errorf("thaw_module has no mutual TLS: %v", mod.GetTransportSocket())
	}
	if !strings.Contains(string(y), "alpn_protocols: [http/1.1]") {
		t.Error("thaw_module's TLS does not offer http/1.1 (thaw's module server speaks HTTP/1.1)")
	}
	if _, err := RenderBootstrap(BootstrapParams{NodeID: "e", XDSAddress: "127.0.0.1:18000",
		Module: &ModuleBridge{Address: "127.0.0.1:18001", ListenPort: DefaultAdminPort}}); err == nil {
		t.Error("bridge on the admin port accepted")
	}
	if _, err := RenderBootstrap(BootstrapParams{NodeID: "e", XDSAddress: "127.0.0.1:18000", Module: &ModuleBridge{}}); err == nil {
		t.Error("bridge without thaw's address accepted")
	}
	y, err = RenderBootstrap(BootstrapParams{NodeID: "e", XDSAddress: "127.0.0.1:18000"})
	if err != nil {
		t.Fatal(err)
	}
	if b := parse(t, y); len(b.GetStaticResources().GetListeners()) != 0 {
		t.Error("bootstrap without Module has a static listener")
	}
}
