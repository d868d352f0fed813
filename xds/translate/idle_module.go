package translate

import (
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"

	"github.com/thaw-dev/thaw/module/state"
	"github.com/thaw-dev/thaw/revision"
)

// Idle revisions on the activator module (issue 28, docs/scaling.md
// "Idle revisions on the module").
//
// With Config.IdleHoldPath and Config.Module, every revision route is
// `cluster_header: x-thaw-cluster` (state.ClusterHeader), for the
// revision's whole life: its per-route configuration names the revision
// and its cluster (state.RouteConfig), and the module, which runs before
// the router on every request of the route, overwrites that header with
// the cluster and clears the route cache (module/activator,
// clusterroute.go). A client-sent value never reaches the router.
//
// A revision without any backend has no cluster and no
// ClusterLoadAssignment (IdleRevision): the module holds its requests
// (Envoy holds no such cluster) and pokes thaw as at zero. The
// autoscaler's wish to wake it (ClusterAhead), or else its first backend,
// brings the cluster and the assignment; back at zero they are removed. Neither changes a route: Envoy never rebuilds its route table
// for a wake or a return to zero, which the hold path of the ext_proc
// activator (hold.go) cannot avoid.

// ClusterRoutes reports whether revision routes take their cluster from
// state.ClusterHeader, written by the module: Config.IdleHoldPath with
// Config.Module.
func ClusterRoutes(cfg *Config) bool {
	return cfg != nil && cfg.IdleHoldPath && cfg.Module != nil
}

// ClusterAhead reports whether rev, even without any backend, has its
// cluster and (empty) ClusterLoadAssignment: with ClusterRoutes, once the
// autoscaler wants it awake (DesiredScale > 0). A wake then sends the
// cluster while the first process or pod starts, and the Envoy
// subscribes to its endpoints meanwhile: when the first backend is ready,
// only the assignment changes, one response and one ACK like any flip,
// instead of the cluster, Envoy's subscription to its endpoints, then the
// assignment (issue 28: that round trip was on every wake's path). The
// module holds the revision's requests as at zero while its state lists
// no backend, cluster or not. Back at zero (no backend, DesiredScale 0)
// the cluster goes as before.
func ClusterAhead(cfg *Config, rev *revision.Revision) bool {
	return ClusterRoutes(cfg) && rev.DesiredScale > 0
}

// routeCluster returns the cluster specifier of a revision route to
// cluster target: the header the module writes with ClusterRoutes, else
// target itself.
func routeCluster(cfg *Config, target string) *routev3.RouteAction {
	if ClusterRoutes(cfg) {
		return &routev3.RouteAction{ClusterSpecifier: &routev3.RouteAction_ClusterHeader{ClusterHeader: state.ClusterHeader}}
	}
	return &routev3.RouteAction{ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: target}}
}

// weightedCluster returns a split member's weighted cluster leading to
// target: through the header the module writes with ClusterRoutes (the
// route cache is cleared with the stream's own random value, so Envoy
// picks the same member again), else target itself.
func weightedCluster(cfg *Config, target string) *routev3.WeightedCluster_ClusterWeight {
	if ClusterRoutes(cfg) {
		return &routev3.WeightedCluster_ClusterWeight{ClusterHeader: state.ClusterHeader}
	}
	return &routev3.WeightedCluster_ClusterWeight{Name: target}
}

// routeConfigCluster returns the cluster the module's per-route
// configuration names for key with ClusterRoutes, else "".
func routeConfigCluster(cfg *Config, key revision.Key) string {
	if ClusterRoutes(cfg) {
		return revision.ClusterName(key)
	}
	return ""
}

// clusterHeaderRemoval returns the route's request_headers_to_remove with
// ClusterRoutes: state.ClusterHeader, so a backend never sees thaw's
// internal header (issue 28). Envoy's router takes the cluster from the
// header when it resolves the route (the header cluster specifier copies
// the value into the route entry) and applies the route's header removals
// afterwards, in its decodeHeaders (finalizeRequestHeaders, after the
// cluster lookup), so the removal never changes the cluster. It is a
// header-map removal in the router, no filter work. Nil without
// ClusterRoutes.
func clusterHeaderRemoval(cfg *Config) []string {
	if ClusterRoutes(cfg) {
		return []string{state.ClusterHeader}
	}
	return nil
}
