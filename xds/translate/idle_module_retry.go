package translate

import (
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	previoushostsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/retry/host/previous_hosts/v3"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// clusterRouteRetryOn is what a revision route retries with ClusterRoutes:
// the conditions of retryPolicy that cannot have reached the application,
// without its retriable-headers (the activator's failover reply).
const clusterRouteRetryOn = "connect-failure,refused-stream,reset-before-request"

// clusterRouteRetryPolicy returns the retry policy of every revision route
// with ClusterRoutes (the activator module with --idle-hold-path, issue
// 28): retryPolicy without the part for the ext_proc activator's failover
// (failover.go). On these routes no request passes the activator
// listener, whose failover reply carries FailoverHeader, and a revision's
// ClusterLoadAssignment lists its ready backends at priority 0 only
// (moduleLoadAssignment), so the retriable header and the
// previous_priorities retry priority could never apply; left in, a
// backend answering with FailoverHeader would have its answer retried.
// What stays: a refused or failed connection, REFUSED_STREAM or a reset
// before the request was sent, retried on another backend
// (previous_hosts), at most FailoverRetries times with the same backoff.
//
// Envoy keeps a retry policy per route, so its size is paid once per
// revision: the two parts left out are ~1.3 KiB of Envoy's heap per
// virtual host (hack/vhost-memory.sh, cuts retryprio,retryhdr; ~130 MB
// at 100,000 revisions; docs/scaling.md "What a virtual host costs").
func clusterRouteRetryPolicy() (*routev3.RetryPolicy, error) {
	pred, err := toAny(&previoushostsv3.PreviousHostsPredicate{})
	if err != nil {
		return nil, err
	}
	return validated(&routev3.RetryPolicy{
		RetryOn:    clusterRouteRetryOn,
		NumRetries: wrapperspb.UInt32(FailoverRetries),
		RetryHostPredicate: []*routev3.RetryPolicy_RetryHostPredicate{{
			Name:       "envoy.retry_host_predicates.previous_hosts",
			ConfigType: &routev3.RetryPolicy_RetryHostPredicate_TypedConfig{TypedConfig: pred},
		}},
		HostSelectionRetryMaxAttempts: 3,
		RetryBackOff: &routev3.RetryPolicy_RetryBackOff{
			BaseInterval: durationpb.New(FailoverBackoffBase),
			MaxInterval:  durationpb.New(FailoverBackoffMax),
		},
	})
}

// revisionRetryPolicy returns the retry policy of cfg's revision routes:
// clusterRouteRetryPolicy with ClusterRoutes, else retryPolicy. It fails
// only on a programming error (constant input).
func revisionRetryPolicy(cfg *Config) *routev3.RetryPolicy {
	if !ClusterRoutes(cfg) {
		return mustRetryPolicy()
	}
	rp, err := clusterRouteRetryPolicy()
	if err != nil {
		panic(err)
	}
	return rp
}
