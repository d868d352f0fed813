package envoy

import (
	"strings"
	"testing"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"sigs.k8s.io/yaml"

	"github.com/thaw-dev/thaw/xds/translate"
)

// TestEnvoyGatewayMerge: the fragment parses as a Bootstrap, carries what
// EG's Envoy needs for thaw and nothing EG owns.
func TestEnvoyGatewayMerge(t *testing.T) {
	out, err := RenderEnvoyGatewayMerge(BootstrapParams{XDSAddress: "thaw-grpc.thaw-system.svc:18001"}, translate.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	j, err := yaml.YAMLToJSON(out)
	if err != nil {
		t.Fatal(err)
	}
	var b bootstrapv3.Bootstrap
	if err := protojson.Unmarshal(j, &b); err != nil {
		t.Fatalf("fragment is not a Bootstrap: %v\n%s", err, out)
	}
	if err := b.ValidateAll(); err != nil {
		t.Fatalf("fragment does not validate: %v", err)
	}
	if b.GetNode() != nil || b.GetDynamicResources() != nil || b.GetAdmin() != nil || b.GetStatsConfig() != nil {
		t.Error("fragment sets node, dynamic_resources, admin or stats_config, which EG owns")
	}
	if b.GetDeferredStatOptions() != nil || b.GetClusterManager() != nil {
		t.Error("fragment changes how EG's Envoy creates stats or clusters for all of EG's clusters")
	}
	var clusters []string
	for _, c := range b.GetStaticResources().GetClusters() {
		clusters = append(clusters, c.GetName())
	}
	if got := strings.Join(clusters, ","); got != "thaw_xds,thaw_extproc,thaw_stats,thaw_activator_dst" {
		t.Errorf("static clusters %s", got)
	}
	var listeners []string
	for _, l := range b.GetStaticResources().GetListeners() {
		listeners = append(listeners, l.GetName())
	}
	if got, want := strings.Join(listeners, ","), translate.ActivatorListenerName+","+translate.WakeListenerName; got != want {
		t.Errorf("static listeners %s, want %s", got, want)
	}
	if len(b.GetBootstrapExtensions()) != 1 || len(b.GetStatsSinks()) != 1 {
		t.Errorf("bootstrap extensions %d, stats sinks %d; want the internal listener and metrics_service",
			len(b.GetBootstrapExtensions()), len(b.GetStatsSinks()))
	}
}
