package local

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"

	"go.uber.org/zap"
	"k8s.io/utils/clock"

	"github.com/thaw-dev/thaw/autoscaler"
	"github.com/thaw-dev/thaw/revision"
)

// ErrNotRunning is returned by SetScale after Run has returned.
var ErrNotRunning = errors.New("local platform not running")

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
	// drainLoads shares Options.Load among draining instances; nil
	// without Options.Load.
	drainLoads *drainLoads

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
	// running holds the instances whose process is set (in.proc), so
	// that recording them (saveStateLocked) walks those, not every revision.
	running map[*instance]struct{}
	// current is the configuration applied last; reloadErr why the file's
	// latest version was not (fully) applied (reload.go). Under mu.
	current   *Config
	reloadErr reloadErrors
}

var _ autoscaler.ScaleTarget = (*Platform)(nil)
var _ autoscaler.ScaleHandles = (*Platform)(nil)

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
		stale: map[*process]stateInstance{}, running: map[*instance]struct{}{}, probeConns: newProbeConns(opts.Clock)}
	p.probeClient = newProbeClient(p.probeConns)
	if opts.Load != nil {
		p.drainLoads = newDrainLoads(opts.Load, opts.Clock, p.log)
	}
	revs := map[revision.Key]*processGroup{}
	for i := range opts.Config.Revisions {
		rc := &opts.Config.Revisions[i]
		revs[rc.Key] = newRevState(rc, opts.Logger)
	}
	p.revs.Store(&revs)
	p.current = opts.Config
	return p
}

// revMap returns the current revisions (never modified: copied on change).
func (p *Platform) revMap() map[revision.Key]*processGroup { return *p.revs.Load() }

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
