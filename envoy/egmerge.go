package envoy

import (
	"encoding/json"
	"fmt"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"sigs.k8s.io/yaml"

	"github.com/thaw-dev/thaw/xds/translate"
)

// egPlaceholderNode stands in for the node id while rendering the merge
// fragment: Envoy Gateway names its Envoys itself.
const egPlaceholderNode = "envoy-gateway"

// egDroppedKeys are top-level bootstrap keys the Envoy Gateway fragment
// leaves to EG: its node, its ADS (EG refuses changes to
// dynamic_resources), its admin, runtime and overload settings, the
// stats matcher (it would hide EG's own stats from EG's users), and the
// deferred creation of stats and of clusters' worker state (they would
// change what EG's users see in /stats for all of EG's clusters).
var egDroppedKeys = []string{"node", "dynamic_resources", "admin", "layered_runtime", "overload_manager", "stats_config",
	"deferred_stat_options", "cluster_manager"}

// RenderEnvoyGatewayMerge returns the bootstrap fragment for Envoy
// Gateway's EnvoyProxy spec.bootstrap (type Merge): thaw's static clusters
// (thaw_xds, thaw_extproc, thaw_stats, with the same HTTP/2, circuit
// breakers and TLS as RenderBootstrap's), the cluster thaw_activator_dst
// and the internal listeners thaw_activator and thaw_activator_wake
// (thaw's own fleet gets those over ADS; EG's Envoy needs them static), the internal listener
// bootstrap extension and the metrics_service stats sink; with p.Module
// also the activator module's bridge (listener and cluster thaw_module,
// as in RenderBootstrap). p.NodeID is not used. Errors wrap ErrInvalidParams or come from building the xds parts.
func RenderEnvoyGatewayMerge(p BootstrapParams, cfg translate.Config) ([]byte, error) {
	p.NodeID = egPlaceholderNode
	full, err := RenderBootstrap(p)
	if err != nil {
		return nil, err
	}
	var doc map[string]any
	if err := yaml.Unmarshal(full, &doc); err != nil {
		return nil, fmt.Errorf("parse rendered bootstrap: %w", err)
	}
	for _, k := range egDroppedKeys {
		delete(doc, k)
	}
	lis, err := translate.ActivatorListener(&cfg)
	if err != nil {
		return nil, err
	}
	wake, err := translate.WakeListener(&cfg)
	if err != nil {
		return nil, err
	}
	dst, err := translate.ActivatorDstCluster(&cfg)
	if err != nil {
		return nil, err
	}
	lisJSON, err := protoValue(lis)
	if err != nil {
		return nil, err
	}
	wakeJSON, err := protoValue(wake)
	if err != nil {
		return nil, err
	}
	dstJSON, err := protoValue(dst)
	if err != nil {
		return nil, err
	}
	sr, _ := doc["static_resources"].(map[string]any)
	if sr == nil {
		return nil, fmt.Errorf("rendered bootstrap has no static_resources")
	}
	clusters, _ := sr["clusters"].([]any)
	sr["clusters"] = append(clusters, dstJSON)
	// The rendered listeners (the module bridge thaw_module, with
	// p.Module) stay; the activator's internal listeners join them.
	listeners, _ := sr["listeners"].([]any)
	sr["listeners"] = append(listeners, lisJSON, wakeJSON)
	out, err := yaml.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("render merge fragment: %w", err)
	}
	if err := Validate(out); err != nil {
		return nil, err
	}
	return out, nil
}

// protoValue converts m to a generic value through protojson (Envoy's
// field names), for embedding in YAML.
func protoValue(m proto.Message) (any, error) {
	b, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("marshal %T: %w", m, err)
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, err
	}
	return v, nil
}
