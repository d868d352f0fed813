package translate

import (
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	httpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	metadatav3 "github.com/envoyproxy/go-control-plane/envoy/type/metadata/v3"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/thaw-dev/thaw/revision"
)

// adsConfigSource tells Envoy to fetch a resource over the ADS stream the
// bootstrap configures.
func adsConfigSource() *corev3.ConfigSource {
	return &corev3.ConfigSource{
		ConfigSourceSpecifier: &corev3.ConfigSource_Ads{Ads: &corev3.AggregatedConfigSource{}},
		ResourceApiVersion:    corev3.ApiVersion_V3,
	}
}

// circuitBreakers raises Envoy's default limits (1024 requests per cluster
// and priority): every held request is one active request on its revision
// cluster and one ext_proc stream.
func circuitBreakers(cfg *Config) *clusterv3.CircuitBreakers {
	limit := wrapperspb.UInt32(cfg.CircuitBreakerMaxRequests)
	return &clusterv3.CircuitBreakers{Thresholds: []*clusterv3.CircuitBreakers_Thresholds{{
		Priority:           corev3.RoutingPriority_DEFAULT,
		MaxConnections:     limit,
		MaxPendingRequests: limit,
		MaxRequests:        limit,
		// Envoy allows 3 concurrent retries per cluster by default: too few
		// when every request of a burst is retried on the backends because
		// the activator is unreachable (see failover.go).
		MaxRetries: limit,
	}}}
}

// activatorDstBreakers returns thaw_activator_dst's circuit breakers: the
// generated clusters' request limits, but connections bounded in total
// (cfg.ActivatorMaxConnections) and per backend
// (cfg.ActivatorMaxConnectionsPerBackend). At the bound Envoy's HTTP/1.1
// pool keeps a released request pending until a connection is free and
// reuses it (upstream_cx_overflow counts the waits), so a burst released
// at once costs Envoy at most that many sockets, not one per request.
func activatorDstBreakers(cfg *Config) *clusterv3.CircuitBreakers {
	total, perBackend := cfg.activatorConnections()
	cb := circuitBreakers(cfg)
	cb.Thresholds[0].MaxConnections = wrapperspb.UInt32(total)
	cb.PerHostThresholds = []*clusterv3.CircuitBreakers_Thresholds{{
		Priority:       corev3.RoutingPriority_DEFAULT,
		MaxConnections: wrapperspb.UInt32(perBackend),
	}}
	return cb
}

// revisionBreakers returns a revision cluster's circuit breakers. With
// the activator module (cfg.Module) the revision's own cluster is where
// the module pins every request, released ones included: it takes
// thaw_activator_dst's connection bounds (per revision cluster and per
// backend), so a burst released from zero opens at most that many
// sockets, and the requests beyond wait in Envoy's pool for a free
// connection (upstream_cx_overflow) instead of failing. That also bounds
// a warm revision's connections, which on the ext_proc path only the
// request limits bound (docs/activator.md, *Open files on the module
// path*).
func revisionBreakers(cfg *Config) *clusterv3.CircuitBreakers {
	if cfg.Module != nil {
		return activatorDstBreakers(cfg)
	}
	return circuitBreakers(cfg)
}

// RevisionClusterParams are the inputs of RevisionCluster.
type RevisionClusterParams struct {
	// Name is the cluster name (ClusterName of the revision).
	Name string
	// Protocol is what Envoy speaks to the backends (and, in proxy mode, to
	// the thaw_activator internal listener, whose upstream then uses the
	// same protocol): "" or ProtocolHTTP1 for HTTP/1.1, ProtocolH2C for
	// cleartext HTTP/2.
	Protocol revision.Protocol
	Config   *Config
	// Parts, when set, supplies shared sub-messages (the memoised
	// translator passes one per Config).
	Parts *Parts
}

// RevisionCluster returns a revision's EDS cluster. Its endpoints (one
// ClusterLoadAssignment of the same name) come over ADS; the cluster itself
// never changes on a mode flip. An h2c revision's cluster speaks HTTP/2
// with prior knowledge (extended CONNECT allowed, so a WebSocket upgrade
// from an HTTP/1.1 client reaches an RFC 8441 backend).
func RevisionCluster(p RevisionClusterParams) (*clusterv3.Cluster, error) {
	pt := p.Parts
	if pt == nil {
		pt = NewParts(p.Config)
	}
	c := &clusterv3.Cluster{
		Name:                 p.Name,
		ClusterDiscoveryType: pt.edsType,
		EdsClusterConfig:     pt.edsConfig,
		ConnectTimeout:       pt.connectTimeout,
		// Least request spreads load by requests in flight, which is what
		// concurrency-based autoscaling measures.
		LbPolicy:        clusterv3.Cluster_LEAST_REQUEST,
		CircuitBreakers: pt.breakers,
		// No transport socket: Envoy's default (plain TCP) reaches both IP
		// endpoints and the thaw_activator internal listener. The
		// internal_upstream socket is only needed to pass metadata or
		// filter state into an internal listener, which thaw does not
		// do, and it cost every warm request (issue 27,
		// docs/BENCHMARKS.md "Where a warm request's Envoy CPU goes").
		// No outlier detection: its timer fires every interval on every
		// cluster, idle or not (failover.go says how thaw fails over
		// without it).
	}
	if p.Protocol == revision.ProtocolH2C {
		c.TypedExtensionProtocolOptions = pt.h2cOptions
	}
	return validated(c)
}

// h2cProtocolOptions returns the typed_extension_protocol_options of an h2c
// revision cluster: explicit HTTP/2 with extended CONNECT allowed.
func h2cProtocolOptions() (map[string]*anypb.Any, error) {
	a, err := toAny(&httpv3.HttpProtocolOptions{
		UpstreamProtocolOptions: &httpv3.HttpProtocolOptions_ExplicitHttpConfig_{
			ExplicitHttpConfig: &httpv3.HttpProtocolOptions_ExplicitHttpConfig{
				ProtocolConfig: &httpv3.HttpProtocolOptions_ExplicitHttpConfig_Http2ProtocolOptions{
					Http2ProtocolOptions: &corev3.Http2ProtocolOptions{AllowConnect: true},
				},
			},
		},
	})
	if err != nil {
		return nil, err
	}
	return map[string]*anypb.Any{httpProtocolOptionsKey: a}, nil
}

// activatorDstIdleTimeout closes a thaw_activator_dst connection idle that
// long. Each Envoy worker has its own connection pool and the connection
// bound is shared: without it one worker that took most of the bound in a
// burst keeps its idle connections (Envoy's default idle timeout is an
// hour) while the other worker's released requests wait on the few it
// got (2,000 at once took 39 s instead of 3 s).
const activatorDstIdleTimeout = time.Second

// downstreamProtocolOptions returns the typed_extension_protocol_options of
// thaw_activator_dst: speak to the backend the protocol the request arrived
// in on the thaw_activator internal listener, which is the revision
// cluster's protocol (see RevisionClusterParams.Protocol).
func downstreamProtocolOptions() (map[string]*anypb.Any, error) {
	a, err := toAny(&httpv3.HttpProtocolOptions{
		CommonHttpProtocolOptions: &corev3.HttpProtocolOptions{IdleTimeout: durationpb.New(activatorDstIdleTimeout)},
		UpstreamProtocolOptions: &httpv3.HttpProtocolOptions_UseDownstreamProtocolConfig{
			UseDownstreamProtocolConfig: &httpv3.HttpProtocolOptions_UseDownstreamHttpConfig{
				HttpProtocolOptions:  &corev3.Http1ProtocolOptions{},
				Http2ProtocolOptions: &corev3.Http2ProtocolOptions{AllowConnect: true},
			},
		},
	})
	if err != nil {
		return nil, err
	}
	return map[string]*anypb.Any{httpProtocolOptionsKey: a}, nil
}

// httpProtocolOptionsKey is the typed_extension_protocol_options key of
// upstream HTTP protocol options.
const httpProtocolOptionsKey = "envoy.extensions.upstreams.http.v3.HttpProtocolOptions"

// ActivatorDstCluster returns cluster thaw_activator_dst: ORIGINAL_DST whose
// destination comes only from the request's dynamic metadata
// thaw.activator/destination, written by the ext_proc service. The
// x-envoy-original-dst-host header is ignored (use_http_header false), so a
// client cannot choose an upstream. Its connections are bounded (see
// activatorDstBreakers).
func ActivatorDstCluster(cfg *Config) (*clusterv3.Cluster, error) {
	opts, err := downstreamProtocolOptions()
	if err != nil {
		return nil, err
	}
	return validated(&clusterv3.Cluster{
		TypedExtensionProtocolOptions: opts,
		Name:                          ActivatorDstClusterName,
		ClusterDiscoveryType:          &clusterv3.Cluster_Type{Type: clusterv3.Cluster_ORIGINAL_DST},
		LbPolicy:                      clusterv3.Cluster_CLUSTER_PROVIDED,
		ConnectTimeout:                durationpb.New(cfg.ConnectTimeout),
		CircuitBreakers:               activatorDstBreakers(cfg),
		LbConfig: &clusterv3.Cluster_OriginalDstLbConfig_{OriginalDstLbConfig: &clusterv3.Cluster_OriginalDstLbConfig{
			UseHttpHeader: false,
			MetadataKey: &metadatav3.MetadataKey{
				Key: MetadataNamespace,
				Path: []*metadatav3.MetadataKey_PathSegment{{
					Segment: &metadatav3.MetadataKey_PathSegment_Key{Key: MetadataDestinationKey},
				}},
			},
		}},
	})
}
