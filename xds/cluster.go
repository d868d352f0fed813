package xds

import (
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	internalupstreamv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/internal_upstream/v3"
	rawbufferv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/raw_buffer/v3"
	metadatav3 "github.com/envoyproxy/go-control-plane/envoy/type/metadata/v3"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
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

// InternalUpstreamTransportSocket returns the internal_upstream transport
// socket (raw_buffer inside) shared by every revision cluster, so one
// cluster definition reaches both IP endpoints (serve mode) and the
// thaw_activator internal listener (proxy mode).
func InternalUpstreamTransportSocket() (*corev3.TransportSocket, error) {
	raw, err := toAny(&rawbufferv3.RawBuffer{})
	if err != nil {
		return nil, err
	}
	iu, err := toAny(&internalupstreamv3.InternalUpstreamTransport{
		TransportSocket: &corev3.TransportSocket{
			Name:       "envoy.transport_sockets.raw_buffer",
			ConfigType: &corev3.TransportSocket_TypedConfig{TypedConfig: raw},
		},
	})
	if err != nil {
		return nil, err
	}
	return validated(&corev3.TransportSocket{
		Name:       "envoy.transport_sockets.internal_upstream",
		ConfigType: &corev3.TransportSocket_TypedConfig{TypedConfig: iu},
	})
}

// RevisionClusterParams are the inputs of RevisionCluster.
type RevisionClusterParams struct {
	// Name is the cluster name (ClusterName of the revision).
	Name string
	// TransportSocket is InternalUpstreamTransportSocket's result; shared,
	// never modified.
	TransportSocket *corev3.TransportSocket
	Config          *Config
	// parts, when set, supplies shared sub-messages (translator).
	parts *parts
}

// RevisionCluster returns a revision's EDS cluster. Its endpoints (one
// ClusterLoadAssignment of the same name) come over ADS; the cluster itself
// never changes on a mode flip.
func RevisionCluster(p RevisionClusterParams) (*clusterv3.Cluster, error) {
	pt := p.parts
	if pt == nil {
		pt = newParts(p.Config)
	}
	return validated(&clusterv3.Cluster{
		Name:                 p.Name,
		ClusterDiscoveryType: pt.edsType,
		EdsClusterConfig:     pt.edsConfig,
		ConnectTimeout:       pt.connectTimeout,
		// Least request spreads load by requests in flight, which is what
		// concurrency-based autoscaling measures.
		LbPolicy:        clusterv3.Cluster_LEAST_REQUEST,
		CircuitBreakers: pt.breakers,
		TransportSocket: p.TransportSocket,
		// Ejects the activator endpoint while ext_proc fails, so proxy-mode
		// traffic fails over to the ready backends (see failover.go).
		OutlierDetection: pt.outlier,
	})
}

// ActivatorDstCluster returns cluster thaw_activator_dst: ORIGINAL_DST whose
// destination comes only from the request's dynamic metadata
// thaw.activator/destination, written by the ext_proc service. The
// x-envoy-original-dst-host header is ignored (use_http_header false), so a
// client cannot choose an upstream.
func ActivatorDstCluster(cfg *Config) (*clusterv3.Cluster, error) {
	return validated(&clusterv3.Cluster{
		Name:                 ActivatorDstClusterName,
		ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_ORIGINAL_DST},
		LbPolicy:             clusterv3.Cluster_CLUSTER_PROVIDED,
		ConnectTimeout:       durationpb.New(cfg.ConnectTimeout),
		CircuitBreakers:      circuitBreakers(cfg),
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
