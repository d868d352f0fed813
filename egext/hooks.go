package egext

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/utils/clock"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/thaw-dev/thaw/revision"
	"github.com/thaw-dev/thaw/xds/translate"
)

// DefaultInitialFetchTimeout is how long EG's Envoy waits for a revision's
// first assignment from thaw before warming the cluster without endpoints
// (requests then fail fast until thaw answers) instead of holding every
// listener update back.
const DefaultInitialFetchTimeout = 10 * time.Second

// ErrInvalidOptions wraps problems with Options.
var ErrInvalidOptions = errors.New("egext: invalid options")

// Options configure the hooks; the same on every replica.
type Options struct {
	// XDS supplies the cluster settings of thaw's own revision clusters
	// (connect timeout, circuit breakers).
	XDS translate.Config
	// InitialFetchTimeout (default DefaultInitialFetchTimeout) must be > 0.
	InitialFetchTimeout time.Duration
	// XDSCluster is the static cluster of EG's Envoy that reaches thaw's
	// xDS port (default translate.XDSClusterName).
	XDSCluster string
	// Metrics, when set, gets the Server's metrics (thaw_eg_hook_calls_total,
	// thaw_eg_hook_duration_seconds). Server only.
	Metrics prometheus.Registerer
	// Clock times hook calls for the metrics (default the real clock).
	// Server only.
	Clock clock.PassiveClock
	// Defaults are the settings a Revision leaves unset (default
	// revision.DefaultSpec(), as the kube platform's); Limits bound them
	// (--hold-budget). The same on every replica, so every replica answers
	// a hook alike.
	Defaults revision.Spec
	Limits   revision.Limits
}

func (o Options) withDefaults() Options {
	if o.InitialFetchTimeout == 0 {
		o.InitialFetchTimeout = DefaultInitialFetchTimeout
	}
	if o.XDSCluster == "" {
		o.XDSCluster = translate.XDSClusterName
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.Defaults.Protocol == "" { // unset: DefaultSpec always names one
		o.Defaults = revision.DefaultSpec()
	}
	return o
}

// Cluster is PostClusterModify as a pure function: EG's cluster for a
// Revision backend becomes translate.ExternalRevisionCluster, keeping EG's name
// and metadata. The result is validated; errors wrap ErrInvalidOptions or
// the validation error.
func Cluster(in *clusterv3.Cluster, rev Revision, o Options) (*clusterv3.Cluster, error) {
	o = o.withDefaults()
	src, err := translate.ExternalEDSConfigSource(o.XDSCluster, o.InitialFetchTimeout)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidOptions, err)
	}
	c, err := translate.ExternalRevisionCluster(translate.ExternalRevisionClusterParams{
		Name: in.GetName(), Key: rev.Key, Protocol: rev.Protocol, EDSConfig: src, Config: &o.XDS,
	})
	if err != nil {
		return nil, fmt.Errorf("cluster %q for %s: %w", in.GetName(), rev.Key, err)
	}
	if in.GetMetadata() != nil {
		c.Metadata = proto.Clone(in.GetMetadata()).(*corev3.Metadata)
	}
	if err := c.ValidateAll(); err != nil {
		return nil, fmt.Errorf("cluster %q for %s: %w", in.GetName(), rev.Key, err)
	}
	return c, nil
}

// Route is PostRouteModify as a pure function. For a route forwarding to a
// cluster (EG's direct responses and redirects come back unchanged) it:
//   - sets x-thaw-revision to "<namespace>/<name>", overwriting every
//     client-sent copy (the activator reads it, as behind thaw_http);
//   - sets thaw's revision retry policy when EG set none, else adds thaw's
//     retry conditions, retriable headers and host predicate to EG's;
//   - sets the route timeout to the request timeout plus the Revision's
//     hold timeout (spec.autoscaling.holdTimeout), so a request held
//     through a cold start is not cut by the request timeout. The request
//     timeout is the HTTPRoute's (timeouts.request, which EG puts on the
//     route) when it sets one, else the Revision's requestTimeout (or
//     thaw's default);
//   - sets the route idle timeout, when EG set none and the Revision
//     sets spec.autoscaling.idleTimeout, to that plus the hold timeout
//     (else the connection manager's stream idle timeout applies).
//
// The result is validated.
func Route(in *routev3.Route, rev Revision) (*routev3.Route, error) {
	r := proto.Clone(in).(*routev3.Route)
	ra := r.GetRoute()
	if ra == nil {
		return r, nil
	}
	r.RequestHeadersToAdd = slices.DeleteFunc(r.RequestHeadersToAdd, func(h *corev3.HeaderValueOption) bool {
		return strings.EqualFold(h.GetHeader().GetKey(), translate.RevisionHeader)
	})
	r.RequestHeadersToAdd = append(r.RequestHeadersToAdd, &corev3.HeaderValueOption{
		Header:       &corev3.HeaderValue{Key: translate.RevisionHeader, Value: rev.Key.String()},
		AppendAction: corev3.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD,
	})
	thaw, err := translate.RevisionRetryPolicy()
	if err != nil {
		return nil, err
	}
	ra.RetryPolicy = mergeRetryPolicy(ra.GetRetryPolicy(), thaw)
	applyTimeouts(ra, rev.Timeouts)
	if err := r.ValidateAll(); err != nil {
		return nil, fmt.Errorf("route %q for %s: %w", in.GetName(), rev.Key, err)
	}
	return r, nil
}

// applyTimeouts sets ra's timeout and idle timeout from t where EG set
// none (see Route); EG's timeout keeps priority over t.Request, and 0 (no
// timeout) stays 0.
func applyTimeouts(ra *routev3.RouteAction, t translate.RouteTimeouts) {
	if ra.GetTimeout() != nil {
		t.Request = ra.GetTimeout().AsDuration()
		if t.Request == 0 { // "no timeout": keep it
			return
		}
	}
	ra.Timeout = durationpb.New(t.RouteTimeout())
	if ra.GetIdleTimeout() == nil && t.Idle > 0 {
		ra.IdleTimeout = durationpb.New(t.RouteIdleTimeout())
	}
}

// mergeRetryPolicy returns thaw's policy when eg is nil, else eg with
// thaw's retry_on conditions, retriable headers, retry priority and host
// predicates added where eg has none, and at least thaw's retry count.
func mergeRetryPolicy(eg, thaw *routev3.RetryPolicy) *routev3.RetryPolicy {
	if eg == nil {
		return thaw
	}
	out := proto.Clone(eg).(*routev3.RetryPolicy)
	on := strings.Split(out.GetRetryOn(), ",")
	for _, c := range strings.Split(thaw.GetRetryOn(), ",") {
		if c != "" && !slices.Contains(on, c) {
			on = append(on, c)
		}
	}
	out.RetryOn = strings.Trim(strings.Join(on, ","), ",")
	out.RetriableHeaders = append(out.RetriableHeaders, thaw.GetRetriableHeaders()...)
	if out.GetRetryPriority() == nil {
		out.RetryPriority = thaw.GetRetryPriority()
	}
	if len(out.GetRetryHostPredicate()) == 0 {
		out.RetryHostPredicate = thaw.GetRetryHostPredicate()
		out.HostSelectionRetryMaxAttempts = thaw.GetHostSelectionRetryMaxAttempts()
	}
	if out.GetNumRetries().GetValue() < thaw.GetNumRetries().GetValue() {
		out.NumRetries = thaw.GetNumRetries()
	}
	if out.GetRetryBackOff() == nil {
		out.RetryBackOff = thaw.GetRetryBackOff()
	}
	return out
}

// InvalidRoute returns in with its action replaced by a 500 direct
// response whose body names reason: the answer for a route whose Revision
// backends thaw cannot serve (ErrTooManyRevisions, ErrInvalidRevision).
// Failing the hook instead would make EG (failOpen false) skip its whole
// translation, freezing every route.
func InvalidRoute(in *routev3.Route, reason error) (*routev3.Route, error) {
	r := proto.Clone(in).(*routev3.Route)
	r.Action = &routev3.Route_DirectResponse{DirectResponse: &routev3.DirectResponseAction{
		Status: 500,
		Body:   &corev3.DataSource{Specifier: &corev3.DataSource_InlineString{InlineString: "thaw: " + reason.Error() + "\n"}},
	}}
	if err := r.ValidateAll(); err != nil {
		return nil, fmt.Errorf("route %q: %w", in.GetName(), err)
	}
	return r, nil
}
