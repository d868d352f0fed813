package translate

import (
	"fmt"
	"strconv"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// A host fetched on demand while thaw is unreachable (issue 28, "the
// failover when thaw is unreachable"; docs/scaling.md, "Virtual hosts on
// demand").
//
// Envoy 1.40's on_demand filter has no timeout for a VHDS fetch: the
// paused request waits until the xDS stream is back and thaw answers
// (source/extensions/filters/http/on_demand/on_demand_update.cc; only
// on-demand CDS takes a timeout). Nothing else fails it while the ADS
// stream is down. What does bound it is the connection manager's stream
// idle timeout: a paused request sends and receives nothing, and until a
// route is found the connection manager's own value applies. Every route
// thaw writes into thaw_http sets its own idle_timeout (RouteAction
// idle_timeout, 0 when the revision has no idle limit), and a route's
// value replaces the connection manager's as soon as the route is
// selected (ActiveStream::refreshIdleTimeout). So with --on-demand-hosts
// listener thaw_http gets stream_idle_timeout = the fetch timeout, which
// only ever applies to a stream that has no route yet: a request whose
// host is being fetched, or a client still sending its headers (which
// gets Envoy's 408 after the fetch timeout instead of 5 minutes). When it
// fires on a request whose host is being fetched, Envoy's local reply
// (408, details stream_idle_timeout, no route) is turned by the mapper
// below into 503 with Retry-After, the answer the activator gives without
// the flag when thaw is unreachable. A routed request's idle timeout is
// left as it is.
//
// With thaw up the bound costs nothing: the fetch answers in one VHDS
// round trip, Envoy recreates the stream (recreateStream), and the new
// stream takes its route's idle timeout. The timer is the one the
// connection manager arms for every stream anyway (default 5 minutes).

// DefaultOnDemandFetchTimeout bounds the wait of a request for a host an
// Envoy does not hold (Config.OnDemandFetchTimeout). It is Envoy's own
// default for an on-demand cluster fetch (OnDemandCds.timeout, 5 s).
const DefaultOnDemandFetchTimeout = 5 * time.Second

// OnDemandUnreachableBody is the body of the 503 a request gets when its
// host could not be fetched within the fetch timeout.
// No trailing newline: it is also a gRPC client's grpc-message.
const OnDemandUnreachableBody = "virtual host not available: thaw did not answer in time"

// onDemandUnreachableExpression is a CEL expression true for the local
// reply of a stream idle timeout on a stream whose request headers were
// received (request.host is absent before) and that has no route (Envoy
// 1.40: response code details "stream_idle_timeout"; xds.route_name is
// absent while no route is selected). A routed stream's idle timeout, and
// a client too slow to send its headers, keep Envoy's 408.
const onDemandUnreachableExpression = "response.code_details == 'stream_idle_timeout' && has(request.host) && !has(xds.route_name)"

// validateOnDemandFetchTimeout returns the problem of OnDemandFetchTimeout.
func (c *Config) validateOnDemandFetchTimeout() error {
	if c.OnDemandFetchTimeout < 0 {
		return fmt.Errorf("%w: OnDemandFetchTimeout %s: want >= 0", ErrInvalidConfig, c.OnDemandFetchTimeout)
	}
	return nil
}

// FetchTimeout returns OnDemandFetchTimeout, defaulted.
func (c *Config) FetchTimeout() time.Duration {
	if c.OnDemandFetchTimeout == 0 {
		return DefaultOnDemandFetchTimeout
	}
	return c.OnDemandFetchTimeout
}

// onDemandRetryAfter is the Retry-After, in seconds, of the 503: the
// module's (Config.Module.RetryAfterSeconds) when set, else 1, as the
// activator's answers.
func onDemandRetryAfter(cfg *Config) int {
	if cfg.Module != nil && cfg.Module.RetryAfterSeconds > 0 {
		return cfg.Module.RetryAfterSeconds
	}
	return 1
}

// OnDemandLocalReplyConfig returns listener thaw_http's local reply
// configuration with --on-demand-hosts: the stream idle timeout of a
// request without a route (its host was not fetched in time) becomes 503
// with Retry-After (retryAfter seconds, at least 1) and
// OnDemandUnreachableBody. Other local replies are left as they are. A
// gRPC client gets UNAVAILABLE (Envoy maps the rewritten 503). It needs
// Envoy's CEL access-log filter, as ActivatorLocalReplyConfig.
func OnDemandLocalReplyConfig(retryAfter int) (*hcmv3.LocalReplyConfig, error) {
	if retryAfter < 1 {
		retryAfter = 1
	}
	filter, err := celFilter(onDemandUnreachableExpression)
	if err != nil {
		return nil, err
	}
	return validated(&hcmv3.LocalReplyConfig{Mappers: []*hcmv3.ResponseMapper{{
		Filter:     filter,
		StatusCode: wrapperspb.UInt32(503),
		Body:       &corev3.DataSource{Specifier: &corev3.DataSource_InlineString{InlineString: OnDemandUnreachableBody}},
		HeadersToAdd: []*corev3.HeaderValueOption{{
			Header:       &corev3.HeaderValue{Key: "retry-after", Value: strconv.Itoa(retryAfter)},
			AppendAction: corev3.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD,
		}},
	}}})
}

// boundOnDemandFetch sets, on listener thaw_http's connection manager, the
// fetch bound described above: stream_idle_timeout = cfg.FetchTimeout()
// and OnDemandLocalReplyConfig.
func boundOnDemandFetch(cfg *Config, hcm *hcmv3.HttpConnectionManager) error {
	lrc, err := OnDemandLocalReplyConfig(onDemandRetryAfter(cfg))
	if err != nil {
		return err
	}
	hcm.StreamIdleTimeout = durationpb.New(cfg.FetchTimeout())
	hcm.LocalReplyConfig = lrc
	return nil
}
