package local

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
	"k8s.io/utils/clock"

	"github.com/thaw-dev/thaw/autoscaler"
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

// ErrNotRunning is returned by SetScale after Run has returned.
var ErrNotRunning = errors.New("local platform not running")

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
	// Load returns per backend address ("ip:port") of revision key the
	// requests Envoy has in flight to it and the connections Envoy holds
	// open to it; a backend absent from the map has neither.
	Load(ctx context.Context, key revision.Key) (map[string]BackendLoad, error)
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

// Platform runs each revision of a Config as a group of local processes and
// implements autoscaler.ScaleTarget: SetScale starts and stops processes,
// GetScale reports the desired and ready counts. Ready processes are the
// revision's backends in the registry.
type Platform struct {
	opts Options
	log  *zap.Logger
	// probeConns are the connections probeClient holds open (probeconns.go).
	probeConns  *probeConns
	probeClient *http.Client

	mu sync.Mutex
	// revs is swapped whole under mu (a reload adds and removes
	// revisions); GetScale reads it without the lock.
	revs    atomic.Pointer[map[revision.Key]*processGroup]
	ports   map[int32]bool // ports handed to live instances
	runCtx  context.Context
	started bool
	closed  bool
	wg      sync.WaitGroup
	// store is the opened StateDir (nil without one); stale holds the
	// recorded processes Run found and is stopping, until they are gone.
	store *stateStore
	boot  string
	stale map[*process]stateInstance
	// current is the configuration applied last; reloadErr why the file's
	// latest version was not (fully) applied (reload.go). Under mu.
	current   *Config
	reloadErr reloadErrors
}

var _ autoscaler.ScaleTarget = (*Platform)(nil)
var _ autoscaler.ScaleHandles = (*Platform)(nil)

// processGroup is one revision's scale target in `thaw local`: its group
// of local processes (instances), the desired count and its
// configuration.
type processGroup struct {
	// cfg is the revision's entry in Options.Config (shared, never
	// modified: a copy per revision cost ~0.4 KiB each at 100,000).
	// A reload of the file swaps it (reload.go); instances read it
	// without the platform's lock.
	cfg         atomic.Pointer[RevisionConfig]
	fingerprint string // configFingerprint(cfg), under the lock
	// removed is set (under the lock) when a reload dropped the revision:
	// its instances stop and no longer publish backends.
	removed bool
	// base is the platform's logger; log() adds the revision (built on
	// demand: a logger per revision up front costs memory at 10,000).
	base      *zap.Logger
	desired   int32
	seq       int
	instances []*instance // live ones, including stopping ones
	// lastErr is why an instance (errInstance) last failed: start error,
	// exit status with the end of its stderr, or failing readiness probe.
	// Cleared when that instance, or any once it is gone, becomes ready.
	lastErr, errInstance string
	// wakeFailed is true while the registry holds a wake failure set by
	// this platform (see instance.wakeFailed).
	wakeFailed bool
	// scale is desired (high 32 bits) and ready instances (low 32 bits)
	// for GetScale, which the decision loops call for every revision on
	// every tick: they read it without the platform's lock. Written under
	// the lock by storeScaleLocked whenever either changes.
	scale atomic.Uint64
}

// storeScaleLocked publishes rs's desired and ready counts to GetScale.
func (rs *processGroup) storeScaleLocked() {
	var ready uint32
	for _, in := range rs.instances {
		if in.ready && !in.stopping {
			ready++
		}
	}
	rs.scale.Store(uint64(uint32(rs.desired))<<32 | uint64(ready))
}

// New returns a Platform for cfg. It starts nothing: call Run. It panics if
// Logger, Registry or Config is nil.
func New(opts Options) *Platform {
	if opts.Logger == nil || opts.Registry == nil || opts.Config == nil {
		panic("local.New: Logger, Registry and Config are required")
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.DrainPeriod == 0 {
		opts.DrainPeriod = DefaultDrainPeriod
	}
	if opts.StartupProbeInterval <= 0 {
		opts.StartupProbeInterval = DefaultStartupProbeInterval
	}
	if opts.RestartBackoff <= 0 {
		opts.RestartBackoff = DefaultRestartBackoff
	}
	if opts.MaxBackoff <= 0 {
		opts.MaxBackoff = DefaultMaxBackoff
	}
	p := &Platform{opts: opts, log: opts.Logger, ports: map[int32]bool{},
		stale: map[*process]stateInstance{}, probeConns: newProbeConns(opts.Clock)}
	p.probeClient = newProbeClient(p.probeConns)
	revs := map[revision.Key]*processGroup{}
	for i := range opts.Config.Revisions {
		rc := &opts.Config.Revisions[i]
		revs[rc.Key] = newRevState(rc, opts.Logger)
	}
	p.revs.Store(&revs)
	p.current = opts.Config
	return p
}

func newRevState(rc *RevisionConfig, base *zap.Logger) *processGroup {
	rs := &processGroup{fingerprint: configFingerprint(*rc), base: base}
	rs.cfg.Store(rc)
	return rs
}

// revMap returns the current revisions (never modified: copied on change).
func (p *Platform) revMap() map[revision.Key]*processGroup { return *p.revs.Load() }

// log returns the platform's logger with the revision's key.
func (rs *processGroup) log() *zap.Logger {
	return rs.base.With(zap.String("revision", rs.cfg.Load().Key.String()))
}

// Run publishes every revision of the Config to the registry (valid ones
// with no backends, invalid ones with their error), marks the registry
// synced, and then manages processes until ctx ends. It then stops every
// process (SIGTERM, SIGKILL after the revision's StopTimeout), removes the
// state file and returns once all have exited.
//
// With a StateDir, Run first adopts the processes a crashed thaw recorded
// there (see adopt): they are probed once and published as backends before
// the registry is marked synced, so the first synced snapshot already
// routes to them. Run returns an error when called twice or when the
// StateDir cannot be used (ErrStateDirInUse when another thaw holds it).
func (p *Platform) Run(ctx context.Context) error {
	p.mu.Lock()
	if p.started {
		p.mu.Unlock()
		return errors.New("local platform: Run called twice")
	}
	p.started = true
	p.mu.Unlock()

	var adopted []adoptedInstance
	if p.opts.StateDir != "" {
		store, err := openStateStore(p.opts.StateDir)
		if err != nil {
			p.mu.Lock()
			p.closed = true
			p.mu.Unlock()
			return err
		}
		defer store.close()
		p.store, p.boot = store, bootID()
		adopted = p.adopt(ctx)
	}

	p.mu.Lock()
	reg := p.opts.Registry
	for _, rc := range p.opts.Config.Revisions {
		reg.Upsert(rc.Key, rc.Spec)
		reg.SetBackends(rc.Key, nil)
	}
	for key, err := range p.opts.Config.Invalid {
		reg.SetInvalid(key, err)
	}
	for _, err := range p.opts.Config.Errors {
		p.log.Error("invalid revision: not started", zap.Error(err))
	}
	p.runCtx = ctx
	p.installAdoptedLocked(adopted)
	reg.SetSynced()
	for _, rs := range p.revMap() {
		p.reconcileLocked(rs, nil)
	}
	p.saveStateLocked()
	p.mu.Unlock()

	<-ctx.Done()
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.wg.Wait()
	if p.store != nil {
		// Every process is gone: this removes the state file.
		p.mu.Lock()
		p.saveStateLocked()
		p.mu.Unlock()
	}
	p.log.Info("local platform stopped")
	return nil
}

// GetScale returns the desired process count of key and how many of its
// processes are ready (not counting ones being stopped). It returns an
// error wrapping autoscaler.ErrNotFound for a revision not in the Config.
// It takes no lock (the decision loops call it for every revision every
// tick): the counts are published by storeScaleLocked.
func (p *Platform) GetScale(_ context.Context, key revision.Key) (current, ready int32, err error) {
	rs := p.revMap()[key]
	if rs == nil {
		return 0, 0, fmt.Errorf("local platform: revision %s: %w", key, autoscaler.ErrNotFound)
	}
	return rs.Scale()
}

// ScaleHandle implements autoscaler.ScaleHandles: the revision's counts
// without the lookup GetScale makes (the revisions are fixed by the Config,
// so a handle stays valid while the platform lives). ok is false for a
// revision not in the Config. A revision a reload removed keeps its
// handle at 0 desired and ready; one it changed keeps its handle.
func (p *Platform) ScaleHandle(key revision.Key) (autoscaler.ScaleReader, bool) {
	rs := p.revMap()[key]
	if rs == nil {
		return nil, false
	}
	return rs, true
}

// Scale returns the desired process count and the ready processes, as
// GetScale does (autoscaler.ScaleReader).
func (rs *processGroup) Scale() (current, ready int32, err error) {
	v := rs.scale.Load()
	return int32(uint32(v >> 32)), int32(uint32(v)), nil
}

// RevisionError returns why key's processes last failed ("" when none did
// since one became ready): the instance and its start error, exit status
// with the last lines of its stderr, or failing readiness probe. `thaw
// status` shows it, so a crash-looping revision explains itself.
func (p *Platform) RevisionError(key revision.Key) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if rs := p.revMap()[key]; rs != nil && rs.lastErr != "" {
		return joinErr(rs.errInstance+": "+rs.lastErr, p.reloadErr.of(key))
	}
	return p.reloadErr.of(key)
}

// SetScale sets how many processes key should run (>= 0) and starts or
// stops processes to match; it does not wait for them. Stopped processes
// leave the backend set before SetScale returns. Errors: ErrNotFound
// (wrapped) for an unknown revision, ErrNotRunning after Run returned, and
// an error for a negative count. Before Run the count is recorded and
// applied when Run starts.
func (p *Platform) SetScale(ctx context.Context, key revision.Key, replicas int32) error {
	if replicas < 0 {
		return fmt.Errorf("local platform: revision %s: scale %d: want >= 0", key, replicas)
	}
	// Measured before taking the lock: it may ask Envoy.
	load := p.loadForScaleDown(ctx, key, replicas)
	p.mu.Lock()
	defer p.mu.Unlock()
	rs := p.revMap()[key]
	if rs == nil {
		return fmt.Errorf("local platform: revision %s: %w", key, autoscaler.ErrNotFound)
	}
	if p.closed {
		return ErrNotRunning
	}
	if rs.desired != replicas {
		rs.log().Info("scale", zap.Int32("from", rs.desired), zap.Int32("to", replicas))
	}
	rs.desired = replicas
	rs.storeScaleLocked()
	if p.runCtx != nil {
		p.reconcileLocked(rs, load)
	}
	return nil
}

// reconcileLocked starts or stops instances so that the non-stopping ones
// number rs.desired. Which ones stop is stopBefore's order: not ready
// first, then the least busy by load (requests or connections per port;
// nil: unknown), then the newest.
func (p *Platform) reconcileLocked(rs *processGroup, load map[int32]int) {
	var active []*instance
	for _, in := range rs.instances {
		if !in.stopping {
			active = append(active, in)
		}
	}
	for n := len(active); n < int(rs.desired); n++ {
		rs.seq++
		in := newInstance(p, rs, rs.seq)
		rs.instances = append(rs.instances, in)
		p.wg.Add(1)
		go in.run(p.runCtx, nil, false)
	}
	if excess := len(active) - int(rs.desired); excess > 0 {
		cand := func(in *instance) stopCandidate {
			return stopCandidate{ready: in.ready, inFlight: load[in.port], seq: in.seq}
		}
		slices.SortStableFunc(active, func(a, b *instance) int { return stopBefore(cand(a), cand(b)) })
		for _, in := range active[:excess] {
			in.stopping = true
			if load != nil {
				in.log.Info("chosen to stop", zap.Int("inFlight", load[in.port]), zap.Bool("ready", in.ready))
			}
			close(in.stop)
		}
		p.publishLocked(rs)
	}
}

// publishLocked sets the revision's backends to its ready, non-stopping
// instances.
func (p *Platform) publishLocked(rs *processGroup) {
	rs.storeScaleLocked()
	if rs.removed {
		return // a reload dropped it: the registry no longer lists it
	}
	var bs []revision.Backend
	for _, in := range rs.instances {
		if in.ready && !in.stopping {
			bs = append(bs, in.backend())
		}
	}
	p.opts.Registry.SetBackends(rs.cfg.Load().Key, bs)
}

// allocPortLocked returns a free loopback port no live instance holds.
func (p *Platform) allocPortLocked() (int32, error) {
	for range 20 {
		port, err := freePort()
		if err != nil {
			return 0, err
		}
		if !p.ports[port] {
			p.ports[port] = true
			return port, nil
		}
	}
	return 0, errors.New("no free loopback port found in 20 tries")
}
