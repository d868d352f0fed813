package translate

import (
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	routerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

const hcmFilterName = "envoy.filters.network.http_connection_manager"

// routerFilter returns the terminal router HTTP filter.
func routerFilter() (*hcmv3.HttpFilter, error) {
	a, err := toAny(&routerv3.Router{})
	if err != nil {
		return nil, err
	}
	return &hcmv3.HttpFilter{Name: "envoy.filters.http.router", ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: a}}, nil
}

// hcmListener wraps an HCM in a listener with one filter chain.
func hcmListener(l *listenerv3.Listener, hcm *hcmv3.HttpConnectionManager) (*listenerv3.Listener, error) {
	a, err := toAny(hcm)
	if err != nil {
		return nil, err
	}
	l.FilterChains = []*listenerv3.FilterChain{{Filters: []*listenerv3.Filter{{
		Name:       hcmFilterName,
		ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: a},
	}}}}
	return validated(l)
}

// HTTPListener returns listener thaw_http: the data-plane entry point on
// cfg.HTTPAddress:cfg.HTTPPort, routes from RDS (route configuration
// thaw_http over ADS). Clients may speak HTTP/1.0, HTTP/1.1 (with WebSocket
// upgrades) or HTTP/2 with prior knowledge (with extended CONNECT). The
// Host header's port and a trailing dot are removed before matching virtual
// hosts (so backends see the host without them), and the client address
// is taken from the connection (use_remote_address), so x-forwarded-for
// from a client is not trusted. cfg.AccessLogPath, when set, turns on a
// JSON access log.
func HTTPListener(cfg *Config) (*listenerv3.Listener, error) {
	router, err := routerFilter()
	if err != nil {
		return nil, err
	}
	accessLog, err := AccessLog(cfg.AccessLogPath)
	if err != nil {
		return nil, err
	}
	hcm := &hcmv3.HttpConnectionManager{
		StatPrefix: HTTPListenerName,
		AccessLog:  accessLog,
		RouteSpecifier: &hcmv3.HttpConnectionManager_Rds{Rds: &hcmv3.Rds{
			ConfigSource:    adsConfigSource(),
			RouteConfigName: HTTPListenerName,
		}},
		HttpFilters:      []*hcmv3.HttpFilter{router},
		UseRemoteAddress: wrapperspb.Bool(true),
		StripPortMode:    &hcmv3.HttpConnectionManager_StripAnyHostPort{StripAnyHostPort: true},
		// "hello.localhost." names the same host as "hello.localhost".
		StripTrailingHostDot: true,
	}
	if cfg.Module != nil {
		mf, err := ModuleFilter(cfg)
		if err != nil {
			return nil, err
		}
		hcm.HttpFilters = []*hcmv3.HttpFilter{mf, router}
	}
	if cfg.OnDemandHosts {
		od, err := OnDemandFilter()
		if err != nil {
			return nil, err
		}
		hcm.HttpFilters = append([]*hcmv3.HttpFilter{od}, hcm.HttpFilters...)
		if err := boundOnDemandFetch(cfg, hcm); err != nil {
			return nil, err
		}
	}
	setProtocols(hcm)
	return hcmListener(&listenerv3.Listener{
		Name: HTTPListenerName,
		// INBOUND lets `thaw local` drain this listener alone on shutdown
		// (admin /drain_listeners?inboundonly), not the activator's.
		TrafficDirection: corev3.TrafficDirection_INBOUND,
		Address: &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
			Address:       cfg.HTTPAddress,
			PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: cfg.HTTPPort},
		}}},
	}, hcm)
}

// ExtProcFilter returns the ext_proc HTTP filter of the activator listener:
// request headers sent (only x-thaw-revision: forward_rules), fail closed
// with 503 (status_on_error; Envoy's default would be 500) when the service
// is unreachable, errs or is late, per-message timeout
// cfg.ExtProcMessageTimeout that the activator may extend up to
// cfg.HoldBudget with override_message_timeout, and permission to write
// dynamic metadata in namespace thaw.activator only.
//
// response_trailer_mode SEND is the completion signal: with it Envoy 1.40
// keeps the ext_proc stream open until the request ends (a response
// without trailers adds no message and no latency), so the activator
// frees the backend's slot at the right time. Measured in
// docs/activator.md ("Completion signal"). Where no slot is tracked
// (container concurrency 0) the server answers with a mode_override to
// ActivatorShortMode, which Envoy accepts (allow_mode_override with that
// one mode allowed) and then closes the stream at once: one round trip.
func ExtProcFilter(cfg *Config) (*hcmv3.HttpFilter, error) { return extProcFilter(cfg, nil, false) }

// extProcFilter is ExtProcFilter with gRPC initial metadata on every
// stream (set by configuration only: a client cannot write it) and, with
// wake, the wake policy's headers forwarded too (wakeForwardRules).
func extProcFilter(cfg *Config, initialMetadata []*corev3.HeaderValue, wake bool) (*hcmv3.HttpFilter, error) {
	rules := activatorForwardRules()
	if wake {
		rules = wakeForwardRules()
	}
	a, err := toAny(&extprocv3.ExternalProcessor{
		GrpcService: &corev3.GrpcService{TargetSpecifier: &corev3.GrpcService_EnvoyGrpc_{
			EnvoyGrpc: &corev3.GrpcService_EnvoyGrpc{ClusterName: ExtProcClusterName},
		}, InitialMetadata: initialMetadata},
		FailureModeAllow:  false,
		StatusOnError:     &typev3.HttpStatus{Code: typev3.StatusCode_ServiceUnavailable},
		ProcessingMode:    activatorMode(extprocv3.ProcessingMode_SEND),
		MessageTimeout:    durationpb.New(cfg.ExtProcMessageTimeout),
		MaxMessageTimeout: durationpb.New(cfg.HoldBudget),
		MetadataOptions: &extprocv3.MetadataOptions{
			ReceivingNamespaces: &extprocv3.MetadataOptions_MetadataNamespaces{Untyped: []string{MetadataNamespace}},
		},
		ForwardRules:         rules,
		AllowModeOverride:    true,
		AllowedOverrideModes: []*extprocv3.ProcessingMode{ActivatorShortMode()},
	})
	if err != nil {
		return nil, err
	}
	return &hcmv3.HttpFilter{Name: "envoy.filters.http.ext_proc", ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: a}}, nil
}

// activatorMode is the activator's processing mode: request headers only,
// response trailers as given.
func activatorMode(responseTrailers extprocv3.ProcessingMode_HeaderSendMode) *extprocv3.ProcessingMode {
	return &extprocv3.ProcessingMode{
		RequestHeaderMode:   extprocv3.ProcessingMode_SEND,
		ResponseHeaderMode:  extprocv3.ProcessingMode_SKIP,
		RequestBodyMode:     extprocv3.ProcessingMode_NONE,
		ResponseBodyMode:    extprocv3.ProcessingMode_NONE,
		RequestTrailerMode:  extprocv3.ProcessingMode_SKIP,
		ResponseTrailerMode: responseTrailers,
	}
}

// ActivatorShortMode is the processing mode the activator switches a stream
// to (ProcessingResponse.mode_override) when it tracks no completion:
// nothing after the request headers, so Envoy closes the stream as soon as
// it has the answer. It is the only override ExtProcFilter allows.
func ActivatorShortMode() *extprocv3.ProcessingMode {
	return activatorMode(extprocv3.ProcessingMode_SKIP)
}

// activatorForwardRules lists the headers Envoy sends to the activator
// for a revision without a wake policy: RevisionHeader alone.
func activatorForwardRules() *extprocv3.HeaderForwardingRules {
	return &extprocv3.HeaderForwardingRules{AllowedHeaders: &matcherv3.ListStringMatcher{
		Patterns: []*matcherv3.StringMatcher{{MatchPattern: &matcherv3.StringMatcher_Exact{Exact: RevisionHeader}}},
	}}
}

// wakeHeaders are the request headers a wake policy may look at (package
// wake: path, method, User-Agent, and the navigation test), sent to the
// activator besides RevisionHeader. Header matchers of wake rules may also
// name any other "x-" header; Envoy's own (x-envoy-*, x-request-id) are
// left out. Only requests through WakeListener (and the hold path) pay
// for them: measured in docs/activator.md ("Forwarded headers").
var wakeHeaders = []string{":method", ":path", "user-agent", "accept", "upgrade", "content-type"}

// wakeForwardRules lists the headers Envoy sends to the activator for a
// revision with a wake policy (wake.MatchableHeader names the same set).
func wakeForwardRules() *extprocv3.HeaderForwardingRules {
	allowed := []*matcherv3.StringMatcher{{MatchPattern: &matcherv3.StringMatcher_Exact{Exact: RevisionHeader}}}
	for _, h := range wakeHeaders {
		allowed = append(allowed, &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Exact{Exact: h}})
	}
	allowed = append(allowed, &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Prefix{Prefix: "x-"}})
	return &extprocv3.HeaderForwardingRules{
		AllowedHeaders: &matcherv3.ListStringMatcher{Patterns: allowed},
		DisallowedHeaders: &matcherv3.ListStringMatcher{Patterns: []*matcherv3.StringMatcher{
			{MatchPattern: &matcherv3.StringMatcher_Prefix{Prefix: "x-envoy-"}},
			{MatchPattern: &matcherv3.StringMatcher_Exact{Exact: "x-request-id"}},
		}},
	}
}

// ActivatorListener returns the internal listener thaw_activator that
// proxy-mode endpoints point at: ext_proc (the activator chooses a backend
// and writes it to dynamic metadata), then the router to
// thaw_activator_dst. The x-thaw-revision header set by thaw_http's route is
// left in place so backends see the same header in both modes.
func ActivatorListener(cfg *Config) (*listenerv3.Listener, error) {
	return activatorListener(cfg, ActivatorListenerName, nil, false)
}

// WakeListener returns the internal listener thaw_activator_wake that the
// proxy-mode endpoints of revisions with a wake policy point at
// (LoadAssignment): ActivatorListener whose ext_proc filter also forwards
// the wake policy's headers (wakeForwardRules). Envoy 1.40's per-route
// ext_proc override (ExtProcOverrides) cannot carry forward_rules, so the
// wider rules need a listener of their own.
func WakeListener(cfg *Config) (*listenerv3.Listener, error) {
	return activatorListener(cfg, WakeListenerName, nil, true)
}

// HoldListener returns the internal listener thaw_hold that the hold
// clusters of idle revisions point at (hold.go): ActivatorListener with
// gRPC initial metadata HoldPathMetadata on its ext_proc streams, so the
// activator counts the requests it holds there, which no revision
// cluster's stats count (extproc.HoldPathMetadata). It forwards the wake
// policy's headers: the hold clusters are shared by every idle revision,
// with or without a policy, and every request there is a cold one.
func HoldListener(cfg *Config) (*listenerv3.Listener, error) {
	return activatorListener(cfg, HoldListenerName, []*corev3.HeaderValue{{Key: HoldPathMetadata, Value: "1"}}, true)
}

func activatorListener(cfg *Config, name string, initialMetadata []*corev3.HeaderValue, wake bool) (*listenerv3.Listener, error) {
	extProc, err := extProcFilter(cfg, initialMetadata, wake)
	if err != nil {
		return nil, err
	}
	router, err := routerFilter()
	if err != nil {
		return nil, err
	}
	hcm := &hcmv3.HttpConnectionManager{
		StatPrefix:     name,
		RouteSpecifier: &hcmv3.HttpConnectionManager_RouteConfig{RouteConfig: ActivatorRouteConfiguration(cfg)},
		HttpFilters:    []*hcmv3.HttpFilter{extProc, router},
	}
	setProtocols(hcm)
	if hcm.LocalReplyConfig, err = ActivatorLocalReplyConfig(time.Second); err != nil {
		return nil, err
	}
	return hcmListener(&listenerv3.Listener{
		Name:              name,
		ListenerSpecifier: &listenerv3.Listener_InternalListener{InternalListener: &listenerv3.Listener_InternalListenerConfig{}},
	}, hcm)
}
