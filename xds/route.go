package xds

import (
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/thaw-dev/thaw/revision"
)

// notFoundVirtualHost answers 404 for hosts no revision claims.
const notFoundVirtualHost = "thaw_not_found"

// VirtualHostParams are the inputs of RevisionVirtualHost.
type VirtualHostParams struct {
	Key revision.Key
	// Domains are the revision's hosts (Envoy matches them
	// case-insensitively, ignoring the port).
	Domains []string
	Config  *Config
	// parts, when set, supplies shared sub-messages (translator).
	parts *parts
	// name, when set, is revision.ClusterName(Key) (translator).
	name string
}

// RevisionVirtualHost returns a revision's virtual host: every path goes to
// its cluster with no overall timeout (held requests wait up to the hold
// budget) and an idle timeout of at least the hold budget. Any client-sent
// x-thaw-revision is removed and replaced by "<namespace>/<name>" (Envoy
// applies removals before additions).
func RevisionVirtualHost(p VirtualHostParams) *routev3.VirtualHost {
	pt := p.parts
	if pt == nil {
		pt = newParts(p.Config)
	}
	name := p.name
	if name == "" {
		name = revision.ClusterName(p.Key)
	}
	return &routev3.VirtualHost{
		Name:    name,
		Domains: p.Domains,
		Routes: []*routev3.Route{{
			Name:  name,
			Match: pt.prefixAll,
			Action: &routev3.Route_Route{Route: &routev3.RouteAction{
				ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: name},
				Timeout:          pt.noTimeout,
				IdleTimeout:      pt.idleTimeout,
				RetryPolicy:      pt.failoverRetry,
			}},
			RequestHeadersToRemove: pt.removeHeaders,
			RequestHeadersToAdd: []*corev3.HeaderValueOption{{
				Header:       &corev3.HeaderValue{Key: RevisionHeader, Value: p.Key.String()},
				AppendAction: corev3.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD,
			}},
		}},
	}
}

// NotFoundVirtualHost returns the catch-all virtual host: 404 for any host
// no revision claims.
func NotFoundVirtualHost() *routev3.VirtualHost {
	return &routev3.VirtualHost{
		Name:    notFoundVirtualHost,
		Domains: []string{"*"},
		Routes: []*routev3.Route{{
			Match:  &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/"}},
			Action: &routev3.Route_DirectResponse{DirectResponse: &routev3.DirectResponseAction{Status: 404}},
		}},
	}
}

// HTTPRouteConfiguration returns route configuration thaw_http from the
// revisions' virtual hosts (sorted, each already validated: validating
// 10,000 of them again here would cost ~100 ms) plus the 404 catch-all.
func HTTPRouteConfiguration(vhosts []*routev3.VirtualHost) (*routev3.RouteConfiguration, error) {
	rc, err := validated(&routev3.RouteConfiguration{
		Name:         HTTPListenerName,
		VirtualHosts: []*routev3.VirtualHost{NotFoundVirtualHost()},
	})
	if err != nil {
		return nil, err
	}
	all := make([]*routev3.VirtualHost, 0, len(vhosts)+1)
	all = append(all, vhosts...)
	rc.VirtualHosts = append(all, rc.VirtualHosts...)
	return rc, nil
}

// ActivatorRouteConfiguration returns the inline route configuration of
// the activator listener: everything to thaw_activator_dst, no overall
// timeout, idle timeout of at least the hold budget.
func ActivatorRouteConfiguration(cfg *Config) *routev3.RouteConfiguration {
	return &routev3.RouteConfiguration{
		Name: ActivatorListenerName,
		VirtualHosts: []*routev3.VirtualHost{{
			Name:    ActivatorListenerName,
			Domains: []string{"*"},
			Routes: []*routev3.Route{{
				Match: &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/"}},
				Action: &routev3.Route_Route{Route: &routev3.RouteAction{
					ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: ActivatorDstClusterName},
					Timeout:          durationpb.New(0),
					IdleTimeout:      durationpb.New(cfg.routeIdleTimeout()),
				}},
			}},
		}},
	}
}
