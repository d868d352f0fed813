package translate

import (
	"errors"
	"fmt"
	"time"

	"github.com/thaw-dev/thaw/module/state"
)

// Fixed resource names shared with the bootstrap (envoy/bootstrap.yaml) and
// the activator. Cluster names contain no '.' because Envoy's stat tag
// extraction cuts a cluster name at the first dot.
const (
	// HTTPListenerName is the data-plane listener and its RDS route
	// configuration.
	HTTPListenerName = "thaw_http"
	// ActivatorListenerName is the internal listener proxy-mode endpoints
	// point at; it runs the ext_proc filter.
	ActivatorListenerName = "thaw_activator"
	// WakeListenerName is thaw_activator's twin for revisions with a wake
	// policy: its ext_proc filter also forwards the headers wake rules
	// match (WakeListener), which the others do not pay for.
	WakeListenerName = "thaw_activator_wake"
	// ActivatorDstClusterName is the ORIGINAL_DST cluster the activator
	// listener routes to, with the destination taken from dynamic metadata.
	ActivatorDstClusterName = state.DstCluster
	// ExtProcClusterName is the bootstrap's static cluster for the ext_proc
	// (activator) gRPC service.
	ExtProcClusterName = "thaw_extproc"
	// RevisionHeader carries "<namespace>/<name>" from thaw_http to the
	// activator and to backends; a client-sent copy is always removed.
	RevisionHeader = "x-thaw-revision"
	// MetadataNamespace is the dynamic-metadata namespace ext_proc writes;
	// its key MetadataDestinationKey holds "<ip>:<port>".
	MetadataNamespace = state.DstMetadataNamespace
	// MetadataDestinationKey is the key under MetadataNamespace that the
	// ORIGINAL_DST cluster reads the upstream address from.
	MetadataDestinationKey = state.DstMetadataKey
)

// Defaults for Config (see DefaultConfig).
const (
	DefaultHTTPAddress = "0.0.0.0"
	DefaultHTTPPort    = 8080
	DefaultHoldBudget  = 60 * time.Second
	// DefaultExtProcMessageTimeout is 5 s, not the 200 ms DESIGN.md first
	// suggested nor the 1 s used before: with 10,000 requests arriving at
	// once on a busy 2-core machine, Envoy's own event loop is late by
	// seconds, and at 1 s 4,000-7,800 of 10,000 first answers were counted
	// as missed (bench burst10k); each miss became a failover retry, and
	// retries reaching ready backends directly bypassed container
	// concurrency. A held request gets override_message_timeout at once; a
	// thaw that is down refuses the connection at once (no wait); only a
	// hung thaw costs the full timeout, until a fleet's health check of
	// thaw_extproc stops sending streams to it.
	DefaultExtProcMessageTimeout     = 5 * time.Second
	DefaultConnectTimeout            = 5 * time.Second
	DefaultCircuitBreakerMaxRequests = 100000
	DefaultStageTimeout              = 2 * time.Second
	// DefaultActivatorMaxConnections bounds thaw_activator_dst's upstream
	// connections, all backends together, per Envoy (docs/activator.md,
	// "Connections on the release path"): a released burst waits in
	// Envoy's connection pool for one of them instead of opening one
	// socket per request (10,000 held requests released at once needed
	// 10,000 sockets, and Envoy ran out of file descriptors).
	DefaultActivatorMaxConnections = 4096
	// DefaultActivatorMaxConnectionsPerBackend bounds thaw_activator_dst's
	// connections to one backend (per_host_thresholds): at least the
	// highest container concurrency Knative allows (1000), so a revision
	// with a limit never queues behind it, and far below a backend's
	// accept queue (net.core.somaxconn, 4096).
	DefaultActivatorMaxConnectionsPerBackend = 1024
)

// ErrInvalidConfig is wrapped by every error Config.Validate returns.
var ErrInvalidConfig = errors.New("invalid xds config")

// Config holds the settings translation and the server use. Build it with
// DefaultConfig and override fields.
type Config struct {
	// HTTPAddress is the IP address listener thaw_http binds (default
	// "0.0.0.0"; tests use "127.0.0.1").
	HTTPAddress string
	// HTTPPort is listener thaw_http's TCP port (default 8080).
	HTTPPort uint32
	// HoldBudget is the longest the activator may hold one request: the
	// ext_proc max_message_timeout. It must be at least every revision's
	// hold timeout (default 60 s).
	HoldBudget time.Duration
	// AccessLogPath, when not empty, is where listener thaw_http writes a
	// JSON access log line per request (a file path or /dev/stdout).
	AccessLogPath string
	// ExtProcMessageTimeout is how long Envoy waits for each ext_proc answer
	// before failing the request closed (default 1 s); the activator
	// extends it per request with override_message_timeout.
	ExtProcMessageTimeout time.Duration
	// ConnectTimeout is the upstream TCP connect timeout of every generated
	// cluster (default 5 s).
	ConnectTimeout time.Duration
	// CircuitBreakerMaxRequests is max_requests, max_pending_requests and
	// max_connections of every generated cluster (default 100,000; Envoy's
	// own default of 1024 would cap held requests per revision).
	CircuitBreakerMaxRequests uint32
	// ActivatorMaxConnections is max_connections of thaw_activator_dst:
	// how many upstream connections one Envoy opens on the release path,
	// all backends together (0: DefaultActivatorMaxConnections).
	// Requests beyond it wait in Envoy's pool (max_pending_requests is
	// CircuitBreakerMaxRequests) and reuse connections as they free up.
	// Each connection is one file descriptor of Envoy's.
	ActivatorMaxConnections uint32
	// ActivatorMaxConnectionsPerBackend is the per-backend max_connections
	// of thaw_activator_dst (0: DefaultActivatorMaxConnectionsPerBackend,
	// or ActivatorMaxConnections when that is lower); at most
	// ActivatorMaxConnections.
	ActivatorMaxConnectionsPerBackend uint32
	// StageTimeout bounds how long the server waits for connected Envoys to
	// ACK new clusters and endpoints before pushing routes that use them
	// (make-before-break), and to ACK routes before removing clusters
	// (default 2 s). A slow Envoy only delays later adds, removes and
	// routing changes, by at most this; mode flips and backend changes are
	// never held behind a stage.
	StageTimeout time.Duration
	// RemovalFirst makes an endpoint update that removes some hosts of a
	// revision and adds others send the removal alone, and the additions
	// once every Envoy ACKed it and every connected module applied it
	// (xds.Server.SetModuleStates; or after StageTimeout): the activator
	// module pins requests with a strict override host and tells a
	// removal only by Envoy's host count (xds/removal_first.go). It is
	// always on with Module; without the module it only delays additions
	// and can leave a serve-mode cluster without hosts for one ACK round
	// trip (a swap of every backend), so it is off there by default.
	RemovalFirst bool
	// InlineRoutes puts every virtual host inline in route configuration
	// thaw_http, as one resource resent whole on every host change (about
	// 160-580 bytes per revision). Needed only by Envoys that use
	// state-of-the-world ADS: Envoy serves VHDS over delta ADS only. The
	// default (false) sends route configuration thaw_http with just the
	// 404 catch-all and every other virtual host over VHDS, one resource
	// each (VHDSRouteConfiguration).
	InlineRoutes bool
	// Module, when set, puts the activator module (module/activator) on
	// listener thaw_http instead of ext_proc: see ModuleConfig and
	// ModuleFilter. nil (the default) keeps the ext_proc activator.
	Module *ModuleConfig
	// IdleHoldPath routes every revision without any backend to the
	// shared hold path (hold.go) instead of giving it a cluster and a
	// ClusterLoadAssignment: an idle revision then costs Envoy one
	// virtual host. Off by default: waking and going idle then change the
	// revision's virtual host, and Envoy rebuilds its whole route table
	// for every virtual host update (docs/scaling.md, "Idle revisions
	// without a cluster"). With Config.Module there is no hold cluster:
	// every revision route takes its cluster from a header the module
	// writes (ClusterRoutes, idle_module.go), so waking and going idle
	// add or remove the cluster and assignment and never change a route.
	// Not when Envoys other than thaw's own fetch revisions' endpoints
	// from thaw (Envoy Gateway: an idle revision's assignment is what
	// holds its requests there).
	IdleHoldPath bool
	// OnDemandHosts makes Envoy hold only the virtual hosts in use (issue
	// 28, ondemand.go): route configuration thaw_http has no inline "*"
	// catch-all, listener thaw_http runs envoy.filters.http.on_demand
	// first, and the server sends a VHDS subscriber only the resident
	// hosts (awake revisions', and for OnDemandEvictAfter after they went
	// back to zero) and those it asked for; any other host is fetched
	// when a request names it.
	// Needs VHDS (not InlineRoutes) over delta ADS. Off by default.
	OnDemandHosts bool
	// OnDemandEvictAfter is how long a virtual host stays in the Envoys
	// that hold it without having asked for it after its revisions went
	// back to zero (0: DefaultOnDemandEvictAfter; an Envoy keeps a host it
	// asked for, docs/scaling.md). Only with OnDemandHosts.
	OnDemandEvictAfter time.Duration
	// OnDemandPerEnvoy bounds the Hosts one Envoy stream asked for that
	// thaw remembers, to answer them again when what they name changes (a
	// revision added for a Host that got 404, a host joining a split); the
	// least recently asked is forgotten first, and the virtual hosts they
	// fetched stay in that Envoy (0: DefaultOnDemandPerEnvoy). Only with
	// OnDemandHosts.
	OnDemandPerEnvoy int
	// OnDemandFetchTimeout bounds how long a request for a host an Envoy
	// does not hold waits for thaw's VHDS answer; past it (thaw
	// unreachable) Envoy answers 503 with Retry-After (ondemand_down.go;
	// 0: DefaultOnDemandFetchTimeout). Only with OnDemandHosts.
	OnDemandFetchTimeout time.Duration
}

// DefaultConfig returns the documented defaults.
func DefaultConfig() Config {
	return Config{
		HTTPAddress:               DefaultHTTPAddress,
		HTTPPort:                  DefaultHTTPPort,
		HoldBudget:                DefaultHoldBudget,
		ExtProcMessageTimeout:     DefaultExtProcMessageTimeout,
		ConnectTimeout:            DefaultConnectTimeout,
		CircuitBreakerMaxRequests: DefaultCircuitBreakerMaxRequests,
		StageTimeout:              DefaultStageTimeout,

		ActivatorMaxConnections:           DefaultActivatorMaxConnections,
		ActivatorMaxConnectionsPerBackend: DefaultActivatorMaxConnectionsPerBackend,
	}
}

// Validate returns nil or all problems joined, each wrapping
// ErrInvalidConfig.
func (c *Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrInvalidConfig}, args...)...))
	}
	if c.HTTPAddress == "" {
		bad("HTTPAddress is empty")
	}
	if c.HTTPPort == 0 || c.HTTPPort > 65535 {
		bad("HTTPPort %d: want 1..65535", c.HTTPPort)
	}
	if c.HoldBudget < time.Second {
		bad("HoldBudget %s: want >= 1s", c.HoldBudget)
	}
	if c.ExtProcMessageTimeout < time.Millisecond || c.ExtProcMessageTimeout > c.HoldBudget {
		bad("ExtProcMessageTimeout %s: want 1ms..HoldBudget", c.ExtProcMessageTimeout)
	}
	if c.ConnectTimeout <= 0 {
		bad("ConnectTimeout %s: want > 0", c.ConnectTimeout)
	}
	if c.CircuitBreakerMaxRequests == 0 {
		bad("CircuitBreakerMaxRequests is 0")
	}
	if total, per := c.activatorConnections(); per > total {
		bad("ActivatorMaxConnectionsPerBackend %d: want at most ActivatorMaxConnections (%d)", per, total)
	}
	if c.StageTimeout < 0 {
		bad("StageTimeout %s: want >= 0", c.StageTimeout)
	}
	if c.Module != nil {
		if err := c.Module.Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	errs = append(errs, c.validateOnDemand()...)
	return errors.Join(errs...)
}

// activatorConnections returns ActivatorMaxConnections and
// ActivatorMaxConnectionsPerBackend with zero fields defaulted.
func (c *Config) activatorConnections() (total, perBackend uint32) {
	total, perBackend = c.ActivatorMaxConnections, c.ActivatorMaxConnectionsPerBackend
	if total == 0 {
		total = DefaultActivatorMaxConnections
	}
	if perBackend == 0 {
		perBackend = min(total, DefaultActivatorMaxConnectionsPerBackend)
	}
	return total, perBackend
}
