package translate

import (
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"

	"github.com/thaw-dev/thaw/revision"
)

// Idle revisions (issue 28, docs/scaling.md "Idle revisions without a
// cluster").
//
// A revision without any backend (at zero, or waking before its first
// process or pod exists) has no cluster and no ClusterLoadAssignment of
// its own: its route goes to a shared hold cluster, HoldClusterName (or
// HoldH2CClusterName for an h2c revision), whose only endpoint is the
// internal listener HoldListenerName, thaw_activator's twin whose ext_proc
// streams are marked HoldPathMetadata: a request held there counts in no
// revision cluster's stats, so the activator reports it to the autoscaler
// itself (extproc.HoldPathMetadata). The route still sets x-thaw-revision
// with OVERWRITE_IF_EXISTS_OR_ADD, so the activator learns the revision
// from thaw's route configuration and never from the client. Envoy then
// holds no per-revision cluster, load assignment, stats scope or timer
// for an idle revision: only its virtual host.
//
// The revision's cluster and load assignment come back with its first
// backend (ready or not). The server's staged apply (xds/apply.go,
// xds/hold_apply.go) keeps the order safe:
// the cluster and its endpoints are sent and ACKed by every Envoy before
// the virtual host routes to them, and when the revision is back at zero
// the virtual host returns to the hold cluster, is ACKed, and only then
// are the cluster and its endpoints removed. While a revision keeps a
// backend, a mode flip is still one ClusterLoadAssignment.
//
// All of this only with Config.IdleHoldPath (off by default: every
// transition makes Envoy rebuild its route table, docs/scaling.md). With
// the activator module (Config.Module) there is no hold cluster and no
// route change: see idle_module.go.

const (
	// HoldListenerName is the internal listener of the hold clusters:
	// thaw_activator's twin whose ext_proc streams carry
	// HoldPathMetadata (HoldListener).
	HoldListenerName = "thaw_hold"
	// HoldPathMetadata marks an ext_proc stream that came through
	// HoldListenerName (extproc.HoldPathMetadata: the same key).
	HoldPathMetadata = "x-thaw-hold-path"
	// HoldClusterName is the shared cluster of idle HTTP/1.1 revisions'
	// routes: one endpoint, the HoldListenerName internal listener.
	HoldClusterName = "thaw_hold"
	// HoldH2CClusterName is HoldClusterName for h2c revisions: it speaks
	// HTTP/2 to the internal listener, so the activator's upstream
	// (thaw_activator_dst, the downstream's protocol) speaks it to the
	// backend.
	HoldH2CClusterName = "thaw_hold_h2c"
)

// HoldClusterFor returns the hold cluster of a revision speaking protocol.
func HoldClusterFor(protocol revision.Protocol) string {
	if protocol == revision.ProtocolH2C {
		return HoldH2CClusterName
	}
	return HoldClusterName
}

// IdleRevision reports whether rev has no cluster and no
// ClusterLoadAssignment: Config.IdleHoldPath is on and rev has no backend
// at all (and, with Config.Module, the autoscaler does not want it awake:
// ClusterAhead). Its routes lead to the hold cluster (IdleTarget), or, with
// Config.Module, still name its own cluster through the module's header
// (ClusterRoutes), which the module holds requests for while Envoy has
// no such cluster.
func IdleRevision(cfg *Config, rev *revision.Revision) bool {
	return cfg.IdleHoldPath && len(rev.Backends) == 0 && !ClusterAhead(cfg, rev)
}

// RouteTarget returns the cluster rev's routes lead to: its own (name),
// or the hold cluster while it is idle without Config.Module.
func RouteTarget(cfg *Config, rev *revision.Revision, name string) string {
	if IdleRevision(cfg, rev) && cfg.Module == nil {
		return HoldClusterFor(rev.Spec.Protocol)
	}
	return name
}

// HoldCluster returns the shared hold cluster for protocol (see
// HoldClusterName): a STATIC cluster whose one endpoint is the
// HoldListenerName internal listener, with the revision clusters' circuit
// breakers (a held request is one active request on it).
func HoldCluster(cfg *Config, protocol revision.Protocol) (*clusterv3.Cluster, error) {
	pt := NewParts(cfg)
	c := &clusterv3.Cluster{
		Name:                 HoldClusterFor(protocol),
		ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_STATIC},
		ConnectTimeout:       pt.connectTimeout,
		CircuitBreakers:      pt.breakers,
		LoadAssignment: &endpointv3.ClusterLoadAssignment{
			ClusterName: HoldClusterFor(protocol),
			Endpoints: []*endpointv3.LocalityLbEndpoints{{LbEndpoints: []*endpointv3.LbEndpoint{{
				HostIdentifier: &endpointv3.LbEndpoint_Endpoint{Endpoint: &endpointv3.Endpoint{
					Address: &corev3.Address{Address: &corev3.Address_EnvoyInternalAddress{
						EnvoyInternalAddress: &corev3.EnvoyInternalAddress{
							AddressNameSpecifier: &corev3.EnvoyInternalAddress_ServerListenerName{
								ServerListenerName: HoldListenerName,
							},
						},
					}},
				}},
			}}}},
		},
	}
	if protocol == revision.ProtocolH2C {
		c.TypedExtensionProtocolOptions = pt.h2cOptions
	}
	return validated(c)
}
