package translate

import (
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"

	"github.com/thaw-dev/thaw/revision"
)

// ServeLoadAssignment returns a serve-mode ClusterLoadAssignment: one
// endpoint per ready backend, in the backends' (sorted) order. A backend
// with Port 0 uses defaultPort (the revision's Spec.Port).
func ServeLoadAssignment(name string, backends []revision.Backend, defaultPort int32) (*endpointv3.ClusterLoadAssignment, error) {
	return validated(&endpointv3.ClusterLoadAssignment{
		ClusterName: name,
		Endpoints:   []*endpointv3.LocalityLbEndpoints{{LbEndpoints: backendEndpoints(backends, defaultPort)}},
	})
}

// backendEndpoints returns one endpoint per ready backend.
func backendEndpoints(backends []revision.Backend, defaultPort int32) []*endpointv3.LbEndpoint {
	lbs := make([]*endpointv3.LbEndpoint, 0, len(backends))
	for _, b := range backends {
		if !b.Ready {
			continue
		}
		port := b.Port
		if port == 0 {
			port = defaultPort
		}
		lbs = append(lbs, &endpointv3.LbEndpoint{HostIdentifier: &endpointv3.LbEndpoint_Endpoint{
			Endpoint: &endpointv3.Endpoint{Address: &corev3.Address{Address: &corev3.Address_SocketAddress{
				SocketAddress: &corev3.SocketAddress{
					Address:       b.Address,
					PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: uint32(port)},
				},
			}}},
		}})
	}
	return lbs
}

// ProxyLoadAssignment returns a proxy-mode ClusterLoadAssignment: at
// priority 0 a single endpoint, the internal listener thaw_activator; at
// priority 1 the revision's ready backends (a backend with Port 0 uses
// defaultPort), which take only the route's retries of requests the
// activator could not take (thaw unreachable, see failover.go), so a
// revision with ready backends keeps serving when thaw is gone. Held
// requests still count in the revision cluster's upstream_rq_active.
func ProxyLoadAssignment(name string, backends []revision.Backend, defaultPort int32) (*endpointv3.ClusterLoadAssignment, error) {
	return proxyLoadAssignment(name, proxyEndpoints(ActivatorListenerName)[0], backends, defaultPort)
}

// proxyLoadAssignment builds a proxy-mode assignment around activator, the
// priority-0 locality the translator shares between all proxy-mode
// revisions (immutable).
func proxyLoadAssignment(name string, activator *endpointv3.LocalityLbEndpoints, backends []revision.Backend, defaultPort int32) (*endpointv3.ClusterLoadAssignment, error) {
	eps := []*endpointv3.LocalityLbEndpoints{activator}
	if fallback := backendEndpoints(backends, defaultPort); len(fallback) > 0 {
		eps = append(eps, &endpointv3.LocalityLbEndpoints{LbEndpoints: fallback, Priority: 1})
	}
	return validated(&endpointv3.ClusterLoadAssignment{ClusterName: name, Endpoints: eps})
}

// proxyEndpoints is the priority-0 locality of a proxy-mode assignment:
// the internal listener named listener (thaw_activator or
// thaw_activator_wake).
func proxyEndpoints(listener string) []*endpointv3.LocalityLbEndpoints {
	return []*endpointv3.LocalityLbEndpoints{{LbEndpoints: []*endpointv3.LbEndpoint{{
		HostIdentifier: &endpointv3.LbEndpoint_Endpoint{Endpoint: &endpointv3.Endpoint{
			Address: &corev3.Address{Address: &corev3.Address_EnvoyInternalAddress{
				EnvoyInternalAddress: &corev3.EnvoyInternalAddress{
					AddressNameSpecifier: &corev3.EnvoyInternalAddress_ServerListenerName{
						ServerListenerName: listener,
					},
				},
			}},
		}},
	}}}}
}
