package translate

import (
	"errors"
	"fmt"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/thaw-dev/thaw/revision"
)

// XDSClusterName is the static cluster an external Envoy (Envoy Gateway's)
// uses to reach thaw's xDS port for per-revision EDS.
const XDSClusterName = "thaw_xds"

// ErrInitialFetchTimeout is returned for an initial fetch timeout <= 0: 0
// makes Envoy wait forever for a revision's first assignment, so one
// unreachable thaw would hold back every listener of the Envoy.
var ErrInitialFetchTimeout = errors.New("xds: initial fetch timeout must be > 0")

// ExternalEDSConfigSource returns the eds_config of a revision cluster in an
// Envoy whose ADS goes elsewhere: a DELTA_GRPC api_config_source to the
// static cluster xdsCluster (thaw_xds). Envoy opens one delta EDS stream
// per cluster using it, which xds.Server serves (Register) and tracks like ADS.
// initialFetch (> 0) bounds how long Envoy waits for the first assignment
// before warming the cluster without endpoints.
func ExternalEDSConfigSource(xdsCluster string, initialFetch time.Duration) (*corev3.ConfigSource, error) {
	if initialFetch <= 0 {
		return nil, ErrInitialFetchTimeout
	}
	return validated(&corev3.ConfigSource{
		ResourceApiVersion:  corev3.ApiVersion_V3,
		InitialFetchTimeout: durationpb.New(initialFetch),
		ConfigSourceSpecifier: &corev3.ConfigSource_ApiConfigSource{ApiConfigSource: &corev3.ApiConfigSource{
			ApiType:             corev3.ApiConfigSource_DELTA_GRPC,
			TransportApiVersion: corev3.ApiVersion_V3,
			GrpcServices: []*corev3.GrpcService{{
				TargetSpecifier: &corev3.GrpcService_EnvoyGrpc_{EnvoyGrpc: &corev3.GrpcService_EnvoyGrpc{ClusterName: xdsCluster}},
			}},
		}},
	})
}

// ExternalRevisionClusterParams are the inputs of ExternalRevisionCluster.
type ExternalRevisionClusterParams struct {
	// Name is the cluster's name in the external Envoy (Envoy Gateway
	// chooses it).
	Name string
	// Key is the revision; its assignment rev_<ns>_<name> is the EDS
	// service name and its stats prefix (alt_stat_name), so thaw's stats
	// sink maps the cluster's stats to the revision.
	Key      revision.Key
	Protocol revision.Protocol
	// EDSConfig is ExternalEDSConfigSource's result.
	EDSConfig *corev3.ConfigSource
	Config    *Config
}

// ExternalRevisionCluster returns a revision's cluster for an external
// Envoy: RevisionCluster (least request,
// circuit breakers, h2c options) with Envoy Gateway's name, the revision's assignment as EDS
// service name over EDSConfig, and alt_stat_name rev_<ns>_<name>.
func ExternalRevisionCluster(p ExternalRevisionClusterParams) (*clusterv3.Cluster, error) {
	if p.Name == "" || p.EDSConfig == nil || p.Config == nil {
		return nil, fmt.Errorf("%w: external revision cluster needs Name, EDSConfig and Config", ErrInvalidConfig)
	}
	name := revision.ClusterName(p.Key)
	c, err := RevisionCluster(RevisionClusterParams{Name: p.Name, Protocol: p.Protocol, Config: p.Config})
	if err != nil {
		return nil, err
	}
	c = proto.Clone(c).(*clusterv3.Cluster) // RevisionCluster shares parts
	c.AltStatName = name
	c.EdsClusterConfig = &clusterv3.Cluster_EdsClusterConfig{ServiceName: name, EdsConfig: p.EDSConfig}
	return validated(c)
}

// RevisionRetryPolicy returns the retry policy of every revision route
// (see retryPolicy): only what cannot have reached the application, and
// the activator failover.
func RevisionRetryPolicy() (*routev3.RetryPolicy, error) { return retryPolicy() }

// RouteTimeout is Envoy's route timeout for t: the request timeout plus the
// hold timeout (see RouteTimeouts).
func (t RouteTimeouts) RouteTimeout() time.Duration { return t.routeTimeout() }

// RouteIdleTimeout is Envoy's route idle timeout for t: 0 when t sets no
// idle limit, else the idle limit plus the hold timeout (see RouteTimeouts).
func (t RouteTimeouts) RouteIdleTimeout() time.Duration { return t.idleTimeout() }
