package local

import (
	"context"
	"time"

	"go.uber.org/zap"
	"k8s.io/utils/clock"

	"github.com/thaw-dev/thaw/revision"
)

// Defaults of Options.
const (
	DefaultDrainPeriod = time.Second
	// DefaultDrainTimeout is Knative's default request timeout: a request
	// may last that long, so a backend scaled away waits that long for its
	// requests before it is signalled.
	DefaultDrainTimeout = 300 * time.Second
	// DefaultStartupProbeInterval: a refused loopback connect costs about
	// 15µs of CPU, so probing every 2ms costs under 1% of a core per
	// starting process and adds about 1ms on average to a cold start.
	DefaultStartupProbeInterval = 2 * time.Millisecond
	DefaultRestartBackoff       = 500 * time.Millisecond
	DefaultMaxBackoff           = 30 * time.Second
	// backoffReset is how long a process must stay up before a later crash
	// restarts it at the initial backoff again.
	backoffReset = 10 * time.Second
)

// Drainer tells when no request is in flight to a backend any more (for
// example the activator, which may have released held requests to it). The
// platform calls WaitIdle after the backend left routing (see Router), and
// before it waits for the backend's connections to close. WaitIdle returns
// nil when the backend is idle, or ctx.Err() when ctx ends first (the
// platform then goes on waiting for connections until the drain timeout).
type Drainer interface {
	WaitIdle(ctx context.Context, key revision.Key, backend revision.Backend) error
}

// Router confirms that the data plane no longer routes to a backend.
type Router interface {
	// WaitUnrouted blocks until every connected Envoy has acknowledged a
	// configuration of revision key that no longer sends new requests to
	// backend, then returns nil; it returns an error wrapping ctx.Err()
	// when ctx ends first.
	WaitUnrouted(ctx context.Context, key revision.Key, backend revision.Backend) error
}

// LoadSource reports the data plane's view of each backend of a revision:
// it ranks the processes to stop on a scale-down, and tells which of a
// draining process's connections are idle ones Envoy keeps.
type LoadSource interface {
	// Load returns per backend address ("ip:port") of the revisions keys
	// (at least one) the requests Envoy has in flight to it and the
	// connections Envoy holds open to it; a backend absent from the map
	// has neither. One call answers for every key (a drain asks for all
	// the revisions it drains at once, see drainLoads).
	Load(ctx context.Context, keys ...revision.Key) (map[string]BackendLoad, error)
}

// BackendLoad is one backend's load as a LoadSource sees it.
type BackendLoad struct {
	// Requests in flight to the backend.
	Requests int
	// Connections open to the backend, busy or idle.
	Connections int
}

// Options configures a Platform. Logger, Registry and Config are required.
type Options struct {
	Logger   *zap.Logger
	Registry *revision.Registry
	Config   *Config
	// Clock drives probes, drain periods, restart backoff and stop
	// timeouts. Default: the real clock.
	Clock clock.Clock
	// Router, when set, confirms that every Envoy stopped routing to an
	// instance scaled away before its drain goes on. Without it the
	// platform waits DrainPeriod instead.
	Router Router
	// DrainPeriod is how long an instance scaled away waits after it left
	// the backend set, when there is no Router, so that every Envoy has
	// applied the new endpoints. Default DefaultDrainPeriod; negative means
	// none.
	DrainPeriod time.Duration
	// Drainer, when set, is waited on once the instance left routing.
	Drainer Drainer
	// DrainTimeout bounds the whole drain of an instance scaled away: from
	// leaving the backend set until SIGTERM, while it still has requests
	// (Drainer) or TCP connections on its port. 0 (the default) ties it to
	// the revision: its request-timeout plus hold-timeout, the longest a
	// request may run through Envoy (DefaultDrainTimeout when the revision
	// sets no request-timeout). Negative means no waiting for requests or
	// connections at all.
	DrainTimeout time.Duration
	// Load, when set, ranks the instances to stop on a scale-down by their
	// requests in flight (least busy first), and lets a draining instance
	// stop while its only connections are idle ones Envoy keeps (with no
	// request in flight). Without it, or when it fails, established
	// connections on each instance's port are counted instead.
	Load LoadSource
	// StartupProbeInterval is how often a process that has not yet passed
	// its readiness probe is checked (a TCP connect; the configured probe
	// runs as soon as it connects), capped by the probe's Period. Later
	// probes run every Period. Default DefaultStartupProbeInterval.
	StartupProbeInterval time.Duration
	// RestartBackoff is the wait before restarting a crashed process; it
	// doubles with every crash up to MaxBackoff and starts over once a
	// process stayed up for 10s. Defaults DefaultRestartBackoff and
	// DefaultMaxBackoff.
	RestartBackoff, MaxBackoff time.Duration
	// StateDir, when set, is a directory (created 0700) where the platform
	// records its running processes (local-instances.json) and sends their
	// output (output/), so that after a crash of thaw the processes keep
	// serving and the next Run adopts them. Run fails with ErrStateDirInUse
	// while another Platform holds it. Empty: no state, processes' output
	// goes through pipes, and processes left by a crash are not adopted.
	StateDir string
}
