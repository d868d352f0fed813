package kube

import (
	"fmt"
	"time"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
	"sigs.k8s.io/yaml"

	"github.com/thaw-dev/thaw/envoy"
	"github.com/thaw-dev/thaw/extproc"
	"github.com/thaw-dev/thaw/modsvc"
	"github.com/thaw-dev/thaw/xds/translate"
)

// LeaderHealthService is the grpc.health.v1 service name the Envoy fleet
// checks on every thaw replica: "" (the server as a whole). thaw reports it
// SERVING only while the replica leads, so Envoy sends its xDS, ext_proc and
// stats streams to the leader only.
const LeaderHealthService = ""

// ExtProcHealthService is the grpc.health.v1 service name Envoy checks on
// the thaw_extproc cluster: every replica reports it SERVING once its
// registry has synced (and NOT_SERVING when it shuts down), so ext_proc
// streams spread over all ready replicas, leader or not.
const ExtProcHealthService = extproc.HealthService

// HealthCheckInterval is how often each Envoy checks each thaw replica; with
// thresholds of 1, Envoy moves its streams within about one interval after
// leadership moves.
const HealthCheckInterval = time.Second

// thawClusters are the bootstrap's static clusters pointing at thaw, with
// the health service each checks: xDS and stats follow the leader, ext_proc
// goes to every ready replica.
var thawClusters = map[string]string{
	"thaw_xds":     LeaderHealthService,
	"thaw_extproc": ExtProcHealthService,
	"thaw_stats":   LeaderHealthService,
}

// FleetBootstrap renders the Envoy bootstrap for an Envoy fleet in front of
// several thaw replicas: envoy.RenderBootstrap with params (whose addresses
// should name thaw's headless Service, making STRICT_DNS clusters with one
// host per replica), plus on each of thaw_xds, thaw_extproc and thaw_stats:
//
//   - an active gRPC health check (grpc.health.v1) every
//     HealthCheckInterval, thresholds 1, also while the cluster carries no
//     traffic: on thaw_xds and thaw_stats for LeaderHealthService, which
//     only the leader passes; on thaw_extproc for ExtProcHealthService,
//     which every ready replica passes;
//   - healthy_panic_threshold 0: Envoy never spreads traffic over unhealthy
//     hosts (its default 50% panic mode would send streams to followers
//     whenever fewer than half the replicas lead, that is with 3 or more);
//   - ignore_health_on_host_removal: replicas gone from DNS leave at once.
//
// Health checks steer new streams only: Envoy keeps an established HTTP/2
// stream on a host that turns unhealthy (close_connections_on_host_health_failure
// applies to tcp_proxy only). The replica that loses leadership ends its
// ADS and stats streams itself with StreamGate.
//
// The result is validated (ValidateAll) and returned as YAML with proto
// field names. Errors: those of envoy.RenderBootstrap, or a params address
// that is an IP (STATIC clusters cannot follow the leader: use a name).
func FleetBootstrap(params envoy.BootstrapParams) ([]byte, error) {
	raw, err := envoy.RenderBootstrap(params)
	if err != nil {
		return nil, err
	}
	return withLeaderHealthChecks(raw)
}

// EnvoyGatewayBootstrap renders the fragment for Envoy Gateway's EnvoyProxy
// spec.bootstrap (type Merge): envoy.RenderEnvoyGatewayMerge with the same
// health checks on thaw's clusters as FleetBootstrap, so EG's Envoy keeps
// its per-revision EDS streams and stats on the leader (StreamGate gates
// them) and spreads ext_proc over every ready replica.
func EnvoyGatewayBootstrap(params envoy.BootstrapParams, cfg translate.Config) ([]byte, error) {
	raw, err := envoy.RenderEnvoyGatewayMerge(params, cfg)
	if err != nil {
		return nil, err
	}
	return withLeaderHealthChecks(raw)
}

// withLeaderHealthChecks adds the health checks FleetBootstrap describes to
// thaw's static clusters in the bootstrap YAML raw.
func withLeaderHealthChecks(raw []byte) ([]byte, error) {
	j, err := yaml.YAMLToJSON(raw)
	if err != nil {
		return nil, fmt.Errorf("kube: bootstrap YAML: %w", err)
	}
	var b bootstrapv3.Bootstrap
	if err := protojson.Unmarshal(j, &b); err != nil {
		return nil, fmt.Errorf("kube: bootstrap proto: %w", err)
	}
	found := 0
	for _, c := range b.GetStaticResources().GetClusters() {
		if c.GetName() == ModuleCluster {
			if c.GetType() != clusterv3.Cluster_STRICT_DNS {
				return nil, fmt.Errorf("kube: cluster %s is %s: give thaw's module address as a DNS name (the headless Service) so Envoy sees every replica",
					c.GetName(), c.GetType())
			}
			addModuleHealthCheck(c)
			continue
		}
		service, ok := thawClusters[c.GetName()]
		if !ok {
			continue
		}
		found++
		if c.GetType() != clusterv3.Cluster_STRICT_DNS {
			return nil, fmt.Errorf("kube: cluster %s is %s: give thaw's addresses as a DNS name (the headless Service) so Envoy sees every replica",
				c.GetName(), c.GetType())
		}
		addHealthCheck(c, service)
	}
	if found != len(thawClusters) {
		return nil, fmt.Errorf("kube: bootstrap has %d of thaw's %d static clusters", found, len(thawClusters))
	}
	if err := b.ValidateAll(); err != nil {
		return nil, fmt.Errorf("kube: bootstrap validation: %w", err)
	}
	out, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(&b)
	if err != nil {
		return nil, fmt.Errorf("kube: bootstrap marshal: %w", err)
	}
	y, err := yaml.JSONToYAML(out)
	if err != nil {
		return nil, fmt.Errorf("kube: bootstrap YAML: %w", err)
	}
	return y, nil
}

// ModuleCluster is the bootstrap cluster of the activator module's bridge
// (envoy.ModuleBridge): health-checked on modsvc.HealthPath, which only the
// leader passes, so each Envoy's module streams from the leader.
const ModuleCluster = "thaw_module"

// addModuleHealthCheck gives the module cluster an HTTP health check of
// modsvc.HealthPath (over the cluster's mutual TLS) with the timing and
// panic settings of addHealthCheck.
func addModuleHealthCheck(c *clusterv3.Cluster) {
	addHealthCheck(c, "")
	c.HealthChecks[0].HealthChecker = &corev3.HealthCheck_HttpHealthCheck_{
		HttpHealthCheck: &corev3.HealthCheck_HttpHealthCheck{Path: modsvc.HealthPath},
	}
}

func addHealthCheck(c *clusterv3.Cluster, service string) {
	interval := durationpb.New(HealthCheckInterval)
	c.HealthChecks = []*corev3.HealthCheck{{
		Timeout:            durationpb.New(HealthCheckInterval),
		Interval:           interval,
		NoTrafficInterval:  interval,
		UnhealthyThreshold: wrapperspb.UInt32(1),
		HealthyThreshold:   wrapperspb.UInt32(1),
		HealthChecker: &corev3.HealthCheck_GrpcHealthCheck_{
			GrpcHealthCheck: &corev3.HealthCheck_GrpcHealthCheck{ServiceName: service},
		},
	}}
	if c.CommonLbConfig == nil {
		c.CommonLbConfig = &clusterv3.Cluster_CommonLbConfig{}
	}
	c.CommonLbConfig.HealthyPanicThreshold = &typev3.Percent{Value: 0}
	c.IgnoreHealthOnHostRemoval = true
}
