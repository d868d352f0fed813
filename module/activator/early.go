//go:build cgo

package main

import "github.com/thaw-dev/thaw/module/state"

// pin sends the request to backend b, whose slot it holds: strictly on
// the revision's cluster (set_upstream_override_host) once this Envoy
// ACKed b, else (b.Early, on a cluster route) through state.DstCluster,
// thaw's ORIGINAL_DST cluster, with b's address in the dynamic metadata
// that cluster reads: the first requests of a woken revision need not wait
// for Envoy's ACK of the endpoints naming b (docs/activator.md, *Cold
// starts without the endpoint ACK*). The route's cluster header is
// overwritten once more and the route cache cleared, so the router
// resolves the route to DstCluster; the address comes from thaw's state,
// never from the client, and DstCluster ignores every request header.
// Only cluster routes can change cluster: on a route that names its
// cluster itself (thaw sends no unconfirmed backend to such a fleet) b is
// pinned as confirmed. f.viaDst (rehold) sends a just-confirmed backend
// the same way while this worker's view of the cluster lags the ACK.
func pin(ep uintptr, f *filter, b *state.Backend) {
	if (b.Early() || f.viaDst) && f.cluster != "" {
		if !f.early {
			f.early = true
			f.rev.StartEarly() // Envoy's stats count it in no revision cluster
		}
		setDestination(ep, b.Addr)
		routeToCluster(ep, state.DstCluster)
		return
	}
	f.rev.PinnedOnCluster() // Envoy's stats carry the revision from now on
	setOverrideHost(ep, b.Addr)
}
