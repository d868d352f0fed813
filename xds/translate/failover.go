package translate

import (
	"strconv"
	"time"

	accesslogv3 "github.com/envoyproxy/go-control-plane/envoy/config/accesslog/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	celv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/access_loggers/filters/cel/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	previouspriorityv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/retry/priority/previous_priorities/v3"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// How Envoy keeps traffic flowing when thaw is unreachable (docs/reliability.md).
//
// A proxy-mode ClusterLoadAssignment lists the activator endpoint at
// priority 0 and the revision's ready backends at priority 1. When the
// ext_proc call fails (thaw down, no healthy thaw replica, or too slow for
// the message timeout), the activator listener answers with
// ActivatorLocalReplyConfig's reply: 503, Retry-After and the
// FailoverHeader. The revision route retries that reply
// (ActivatorFailoverRetryPolicy) on the next priority, the backends, after
// a short backoff (FailoverBackoffBase), so the client sees no error while
// backends are ready; at zero the retries find only the activator again and
// the client gets the 503 with Retry-After (gRPC clients: UNAVAILABLE),
// never a 500 or an empty 504.
//
// Every request tries the activator first, also while thaw stays down:
// there is no outlier detection on revision clusters. Envoy runs an
// outlier detector's timer every interval on every cluster, idle or not,
// and with 100,000 revision clusters created together those timers took a
// fifth of a second of Envoy's main thread every second, which delayed
// mode flips (docs/scaling.md). Trying a thaw that is down costs little: a
// refused connection, or, in a Kubernetes fleet, no healthy thaw_extproc
// host (its health check and panic threshold 0 make the call fail at
// once). Only a thaw that hangs before its health check notices costs the
// message timeout. Traffic returns to the activator with the first request
// after thaw answers again.
//
// The activator's own refusals (queue full, hold timeout) carry no
// FailoverHeader, so they are never retried: Envoy tells "thaw
// unreachable" from "thaw says no" by the response code details of the
// local reply (ext_proc_error...), which only Envoy's ext_proc filter
// sets. A request the activator had already routed to a backend is retried
// only for safe methods (GET, HEAD, OPTIONS).

// FailoverHeader marks the activator listener's reply to a request whose
// ext_proc call failed. The revision route retries on it.
const FailoverHeader = "x-thaw-activator-unavailable"

// Retries of the revision route (ActivatorFailoverRetryPolicy). Envoy
// waits a random time below base × 2^(n-1) before the n-th retry, at most
// FailoverBackoffMax: below 10, 20, 40, ... 640 ms, then 1 s. The first
// wait is short because every request pays it while thaw is down; the
// eight retries together still span about a second on average (at most
// 2.3 s), as long as a Kubernetes fleet's health check takes to stop
// sending ext_proc streams to a dead replica, so a request whose replica
// died reaches a live one.
const (
	// FailoverRetries is how many times the revision route retries a
	// request whose ext_proc call failed.
	FailoverRetries = 8
	// FailoverBackoffBase is the base of Envoy's jittered exponential
	// backoff between retries.
	FailoverBackoffBase = 10 * time.Millisecond
	// FailoverBackoffMax bounds one wait between retries.
	FailoverBackoffMax = time.Second
)

// extProcErrorExpression is a CEL expression true for the local replies the
// ext_proc filter sends when its gRPC call fails or times out (response
// code details "ext_proc_error_gRPC_error_<code>..." and
// "ext_proc_error_per-message_timeout_exceeded" on Envoy 1.40).
const extProcErrorExpression = "response.code_details.startsWith('ext_proc_error')"

// retriableExtProcErrorExpression narrows extProcErrorExpression to the
// replies that are safe to retry on another priority: the activator had not
// routed the request yet (no destination in the thaw.activator dynamic
// metadata, so no backend saw it), or the method is safe to repeat. With
// response_trailer_mode SEND the ext_proc stream lasts as long as the
// request, so thaw dying while a routed request is in flight fails that
// request too.
const retriableExtProcErrorExpression = extProcErrorExpression +
	" && (!('" + MetadataNamespace + "' in metadata.filter_metadata) || request.method in ['GET', 'HEAD', 'OPTIONS'])"

// ActivatorLocalReplyConfig returns the activator listener's local reply
// configuration: a reply caused by an ext_proc failure becomes 503 with
// Retry-After (retryAfter, whole seconds, at least 1), plus FailoverHeader
// when retrying it is safe (see retriableExtProcErrorExpression). Other
// local replies (the activator's own answers, router errors) are left as
// they are. It needs Envoy's CEL access-log filter
// (envoy.access_loggers.extension_filters.cel, in the official builds).
func ActivatorLocalReplyConfig(retryAfter time.Duration) (*hcmv3.LocalReplyConfig, error) {
	secs := int64((retryAfter + time.Second - 1) / time.Second)
	if secs < 1 {
		secs = 1
	}
	retryAfterHeader := &corev3.HeaderValueOption{
		Header:       &corev3.HeaderValue{Key: "retry-after", Value: strconv.FormatInt(secs, 10)},
		AppendAction: corev3.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD,
	}
	retriable, err := celFilter(retriableExtProcErrorExpression)
	if err != nil {
		return nil, err
	}
	other, err := celFilter(extProcErrorExpression)
	if err != nil {
		return nil, err
	}
	return validated(&hcmv3.LocalReplyConfig{Mappers: []*hcmv3.ResponseMapper{{
		Filter:     retriable,
		StatusCode: wrapperspb.UInt32(503),
		HeadersToAdd: []*corev3.HeaderValueOption{retryAfterHeader, {
			Header:       &corev3.HeaderValue{Key: FailoverHeader, Value: "1"},
			AppendAction: corev3.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD,
		}},
	}, {
		Filter:       other,
		StatusCode:   wrapperspb.UInt32(503),
		HeadersToAdd: []*corev3.HeaderValueOption{retryAfterHeader},
	}}})
}

// celFilter returns an access-log filter evaluating a CEL expression.
func celFilter(expr string) (*accesslogv3.AccessLogFilter, error) {
	cel, err := toAny(&celv3.ExpressionFilter{Expression: expr})
	if err != nil {
		return nil, err
	}
	return &accesslogv3.AccessLogFilter{FilterSpecifier: &accesslogv3.AccessLogFilter_ExtensionFilter{
		ExtensionFilter: &accesslogv3.ExtensionFilter{
			Name:       "envoy.access_loggers.extension_filters.cel",
			ConfigType: &accesslogv3.ExtensionFilter_TypedConfig{TypedConfig: cel},
		},
	}}, nil
}

// ActivatorFailoverRetryPolicy returns the retry policy of a revision route
// for the activator's failover reply: retry on FailoverHeader, at most
// FailoverRetries times with backoff FailoverBackoffBase..FailoverBackoffMax,
// each retry on a priority not tried yet (previous_priorities), so the
// retry of a request the activator could not take goes to the ready
// backends of priority 1. The request never reached a backend (ext_proc
// failed before choosing one), so the retry is safe for any method. Merge
// it with other retry conditions of the route rather than replacing them.
func ActivatorFailoverRetryPolicy() (*routev3.RetryPolicy, error) {
	prio, err := toAny(&previouspriorityv3.PreviousPrioritiesConfig{UpdateFrequency: 1})
	if err != nil {
		return nil, err
	}
	return validated(&routev3.RetryPolicy{
		RetryOn:    "retriable-headers",
		NumRetries: wrapperspb.UInt32(FailoverRetries),
		RetriableHeaders: []*routev3.HeaderMatcher{{
			Name:                 FailoverHeader,
			HeaderMatchSpecifier: &routev3.HeaderMatcher_PresentMatch{PresentMatch: true},
		}},
		RetryPriority: &routev3.RetryPolicy_RetryPriority{
			Name:       "envoy.retry_priorities.previous_priorities",
			ConfigType: &routev3.RetryPolicy_RetryPriority_TypedConfig{TypedConfig: prio},
		},
		RetryBackOff: &routev3.RetryPolicy_RetryBackOff{
			BaseInterval: durationpb.New(FailoverBackoffBase),
			MaxInterval:  durationpb.New(FailoverBackoffMax),
		},
	})
}
