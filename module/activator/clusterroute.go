//go:build cgo

package main

// Cluster routes (thaw's idle clusters, docs/scaling.md "Idle revisions
// on the module"): a revision route whose per-route configuration names
// its cluster (state.RouteConfig.Cluster) is `cluster_header:
// x-thaw-cluster`, the same for the revision's whole life, so a wake or
// a return to zero changes Envoy's clusters only, never its route table.
// The module writes that header on every request of such a route before
// the router reads it: it overwrites every client-sent value with the
// revision's own cluster and clears the route cache, so the router
// resolves the route again from thaw's value (a client never chooses an
// upstream). While Envoy holds no such cluster (the revision is at zero:
// thaw removed it), the stream's routed cluster is missing and the
// request is held as at zero; when the state update brings backends
// (sent only after this Envoy ACKed the cluster's endpoints), the header
// is written once more, the route resolved again, and the request pinned
// as on any route.

// routeOf returns the revision route's state and the cluster it names
// ("" for a route that names its cluster itself), or nil without
// per-route configuration.
func routeOf(ep uintptr) *routeCfg {
	if rc := routeConfig(ep); rc != 0 {
		return routeCfgOf(rc)
	}
	return nil
}

// routeUnfiltered handles a request the module could not give a filter
// (its stream limit): on a cluster route the header is still overwritten
// with the revision's cluster, so the request goes unpinned to the
// revision's own cluster (or gets Envoy's 503 when it has none), never
// to one a client named.
func routeUnfiltered(ep uintptr) {
	if rc := routeOf(ep); rc != nil && rc.cluster != "" {
		routeToCluster(ep, rc.cluster)
	}
}

// envoyBehind reports whether this Envoy's view of the revision's
// cluster is behind the module's state, which lists backends (> 0) that
// this Envoy ACKed (state.Revision.Confirmed; an unconfirmed one goes
// through state.DstCluster, early.go): its
// cluster lists fewer hosts (behindRemoval), or, on a cluster route,
// Envoy holds no such cluster at all (removed at zero before the state
// update that removes the backends arrived, or added on the main thread
// and not yet on this worker). A pin now would fail with a 503; the
// request is held for the next state update instead.
func envoyBehind(ep uintptr, f *filter, backends int) bool {
	if f.cluster == "" {
		return behindRemoval(ep, backends)
	}
	n := clusterHosts(ep)
	return n < 0 || n < backends
}
