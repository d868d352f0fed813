package translate

import (
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	previoushostsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/retry/host/previous_hosts/v3"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/thaw-dev/thaw/revision"
)

// notFoundVirtualHost answers 404 for hosts no revision claims.
const notFoundVirtualHost = "thaw_not_found"

// VirtualHostName returns the name of a virtual host of route
// configuration thaw_http: "thaw_http/<name>". Envoy's VHDS takes a virtual
// host's resource name as the key it removes by and accepts only names that
// start with the route configuration's name and a slash (measured on Envoy
// 1.40), so the resource name and the virtual host's own name are the same.
func VirtualHostName(name string) string { return HTTPListenerName + "/" + name }

// VirtualHostParams are the inputs of RevisionVirtualHost.
type VirtualHostParams struct {
	Key revision.Key
	// Domains are the revision's hosts (Envoy matches them
	// case-insensitively, ignoring the port).
	Domains []string
	Config  *Config
	// Parts, when set, supplies shared sub-messages (the memoised
	// translator passes one per Config).
	Parts *Parts
	// Name, when set, is revision.ClusterName(Key) (saves validating the
	// key again).
	Name string
	// Cluster, when set, is the cluster the route leads to instead of the
	// revision's own: a hold cluster while the revision is idle (hold.go).
	Cluster string
	// Timeouts are the revision's request timeouts; the zero value means
	// revision.DefaultRequestTimeout and hold timeout, no idle limit.
	Timeouts RouteTimeouts
}

// RouteTimeouts are the per-revision timeouts a revision's route carries.
type RouteTimeouts struct {
	// Request is revision.Spec.RequestTimeout (0 = the default, 300 s).
	Request time.Duration
	// Idle is revision.Spec.IdleTimeout (0 = no idle limit).
	Idle time.Duration
	// Hold is revision.Spec.HoldTimeout (0 = the default, 60 s): how long
	// the activator may hold a request before it reaches a backend.
	Hold time.Duration
}

// TimeoutsOf returns the route timeouts of a revision spec.
func TimeoutsOf(s *revision.Spec) RouteTimeouts {
	return RouteTimeouts{Request: s.RequestTimeout, Idle: s.IdleTimeout, Hold: s.HoldTimeout}
}

// routeTimeout is Envoy's route timeout for t: the request timeout plus
// the hold timeout. Envoy starts the route timer when the client's request
// has been received, before the activator holds it; adding the hold time
// keeps the time spent waiting for a backend out of the request timeout.
// An upgraded connection (WebSocket) never completes its request, so the
// route timer never starts for it.
func (t RouteTimeouts) routeTimeout() time.Duration {
	req, hold := t.Request, t.Hold
	if req == 0 {
		req = revision.DefaultRequestTimeout
	}
	if hold == 0 {
		hold = revision.DefaultHoldTimeout
	}
	return req + hold
}

// idleTimeout is Envoy's route idle timeout for t: 0 (disabled, also
// overriding the connection manager's 5 minute default) when no idle limit
// is set, else the idle limit plus the hold timeout (a held request sends
// and receives nothing).
func (t RouteTimeouts) idleTimeout() time.Duration {
	if t.Idle == 0 {
		return 0
	}
	hold := t.Hold
	if hold == 0 {
		hold = revision.DefaultHoldTimeout
	}
	return t.Idle + hold
}

// RevisionVirtualHost returns a revision's virtual host (named
// VirtualHostName of its cluster name): every path goes to
// its cluster with the revision's timeouts (see RouteTimeouts) and the
// always-safe retry policy (see retryPolicy). x-thaw-revision is set to
// "<namespace>/<name>" with OVERWRITE_IF_EXISTS_OR_ADD, which replaces
// every client-sent copy (Envoy's setReferenceKey removes all entries of
// the key before adding), so no separate removal is needed: one header
// operation per warm request instead of two (issue 27).
func RevisionVirtualHost(p VirtualHostParams) *routev3.VirtualHost {
	pt := p.Parts
	if pt == nil {
		pt = NewParts(p.Config)
	}
	name := p.Name
	if name == "" {
		name = revision.ClusterName(p.Key)
	}
	target := p.Cluster
	if target == "" {
		target = name
	}
	action := routeCluster(p.Config, target)
	action.Timeout = pt.duration(p.Timeouts.routeTimeout())
	action.IdleTimeout = pt.duration(p.Timeouts.idleTimeout())
	action.RetryPolicy = pt.retryPolicy
	return &routev3.VirtualHost{
		Name:    VirtualHostName(name),
		Domains: p.Domains,
		Routes: []*routev3.Route{{
			Name:   name,
			Match:  pt.prefixAll,
			Action: &routev3.Route_Route{Route: action},
			RequestHeadersToAdd: []*corev3.HeaderValueOption{{
				Header:       &corev3.HeaderValue{Key: RevisionHeader, Value: p.Key.String()},
				AppendAction: corev3.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD,
			}},
			RequestHeadersToRemove: clusterHeaderRemoval(p.Config),
			TypedPerFilterConfig:   pt.moduleRouteConfig(p.Config, p.Key, name),
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

// VHDSRouteConfiguration returns route configuration thaw_http when its
// virtual hosts come from VHDS (over ADS, delta only): it holds only the
// 404 catch-all, and Envoy subscribes (wildcard) to every virtual host
// thaw serves, each a resource of its own (VirtualHostName), so adding or
// removing a revision sends one virtual host, not all of them. Envoy picks
// the most specific domain match across inline and VHDS virtual hosts, so
// the catch-all only answers hosts no revision claims.
func VHDSRouteConfiguration() (*routev3.RouteConfiguration, error) {
	return validated(&routev3.RouteConfiguration{
		Name:         HTTPListenerName,
		VirtualHosts: []*routev3.VirtualHost{NotFoundVirtualHost()},
		Vhds:         &routev3.Vhds{ConfigSource: adsConfigSource()},
	})
}

// ActivatorRouteConfiguration returns the inline route configuration of
// the activator listener: everything to thaw_activator_dst with no
// timeout of its own. The revision's route (RevisionVirtualHost) carries the
// revision's timeouts for both modes; the hold is bounded by ext_proc's
// max_message_timeout (the hold budget).
func ActivatorRouteConfiguration(_ *Config) *routev3.RouteConfiguration {
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
					IdleTimeout:      durationpb.New(0),
				}},
				ResponseHeadersToAdd: []*corev3.HeaderValueOption{coldStartHeader()},
			}},
		}},
	}
}

// ColdStartHeader is the response header giving how long the activator
// held a request, in milliseconds (wake policy coldStartHeader).
const ColdStartHeader = "x-thaw-cold-start"

// coldStartHeader copies the activator's cold_start_ms dynamic metadata
// (written only for held requests of revisions that ask for it) into
// ColdStartHeader. Absent metadata formats to an empty value, and Envoy
// adds no header with an empty value (keep_empty_value false): warm and
// unheld requests get no header. It is on the activator listener only,
// never on the warm path.
func coldStartHeader() *corev3.HeaderValueOption {
	return &corev3.HeaderValueOption{
		Header:       &corev3.HeaderValue{Key: ColdStartHeader, Value: "%DYNAMIC_METADATA(" + MetadataNamespace + ":cold_start_ms)%"},
		AppendAction: corev3.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD,
	}
}

// retryPolicy returns every revision route's retry policy. It retries only
// what cannot have reached the application, at most FailoverRetries times
// with back-off:
//   - connection refused or failed, HTTP/2 REFUSED_STREAM, a reset before
//     the request was sent (a crashed backend in serve mode), each time on
//     another backend (previous_hosts);
//   - an answer carrying FailoverHeader: the activator path failed before
//     the request was routed (thaw unreachable, failover.go), on the next
//     priority (previous_priorities: the proxy-mode CLA's ready backends).
//
// Never on an application's answer or a timeout, so a non-idempotent
// request is never sent twice.
func retryPolicy() (*routev3.RetryPolicy, error) {
	rp, err := ActivatorFailoverRetryPolicy()
	if err != nil {
		return nil, err
	}
	pred, err := toAny(&previoushostsv3.PreviousHostsPredicate{})
	if err != nil {
		return nil, err
	}
	rp.RetryOn = "connect-failure,refused-stream,reset-before-request," + rp.RetryOn
	rp.RetryHostPredicate = []*routev3.RetryPolicy_RetryHostPredicate{{
		Name:       "envoy.retry_host_predicates.previous_hosts",
		ConfigType: &routev3.RetryPolicy_RetryHostPredicate_TypedConfig{TypedConfig: pred},
	}}
	rp.HostSelectionRetryMaxAttempts = 3
	return validated(rp)
}
