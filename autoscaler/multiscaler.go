package autoscaler

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"k8s.io/utils/clock"

	"github.com/thaw-dev/thaw/revision"
)

// Multiscaler defaults.
const (
	// DefaultTickInterval is how often each revision is decided (Knative's
	// tick).
	DefaultTickInterval = 2 * time.Second
	// DefaultScaleTimeout bounds each ScaleTarget.SetScale call.
	DefaultScaleTimeout = 10 * time.Second
	// expireInterval is how often the collector drops idle revisions.
	expireInterval = time.Minute
)

// MultiscalerOptions configures a Multiscaler. Zero values take defaults.
type MultiscalerOptions struct {
	// Logger gets Info logs for scale changes and panic transitions, Error
	// logs for scale target failures (once per distinct error). Default:
	// no logs.
	Logger *zap.Logger
	// Clock drives the tickers and stamps decisions. Default: real clock.
	Clock clock.WithTicker
	// Collector supplies window averages; the same one the stats sink and
	// the activator record into. Default: an empty collector.
	Collector *Collector
	// Target reads and sets replica counts. Required.
	Target ScaleTarget
	// Confirmer says since when proxy mode is confirmed by every Envoy.
	// nil means never confirmed: no revision is ever scaled to zero.
	Confirmer ModeConfirmer
	// TickInterval is the decision period per revision (default 2 s).
	TickInterval time.Duration
	// EnableScaleToZero allows replicas to reach 0; nil means true.
	EnableScaleToZero *bool
	// Registerer receives the per-revision metrics. Default: a private
	// registry (metrics not exported).
	Registerer prometheus.Registerer
	// ScaleTimeout bounds each ScaleTarget.SetScale call (default 10 s).
	// GetScale runs every tick for every revision with the loop's context
	// only: implementations should answer it from a cache.
	ScaleTimeout time.Duration
}

// Multiscaler runs one decision loop per revision of a revision.Registry:
// every TickInterval, or at once when poked while at zero, it reads the
// scale target, runs the Decider and the Gate, applies the result through
// ScaleTarget.SetScale when it differs from the current replicas, records
// it in the registry (SetDesiredScale) and tells OnDecision subscribers when
// the desired or recommended scale, WantZero, validity or the sign of the
// excess burst capacity changed. A failing revision is reported (log, metric) without affecting
// others.
type Multiscaler struct {
	opts      MultiscalerOptions
	log       *zap.Logger
	metrics   *metrics
	toZero    bool
	collector *Collector

	mu      sync.RWMutex
	runners map[revision.Key]*runner

	subsMu sync.Mutex
	subs   atomic.Pointer[[]func(Decision)]

	registry atomic.Pointer[revision.Registry]
	running  atomic.Bool
	wg       sync.WaitGroup
}

var _ Poker = (*Multiscaler)(nil)

// NewMultiscaler returns a Multiscaler; call Run to start it. It panics if
// opts.Target is nil.
func NewMultiscaler(opts MultiscalerOptions) *Multiscaler {
	if opts.Target == nil {
		panic("autoscaler: MultiscalerOptions.Target is required")
	}
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Collector == nil {
		opts.Collector = NewCollector(CollectorOptions{Clock: opts.Clock})
	}
	if opts.TickInterval <= 0 {
		opts.TickInterval = DefaultTickInterval
	}
	if opts.ScaleTimeout <= 0 {
		opts.ScaleTimeout = DefaultScaleTimeout
	}
	if opts.Registerer == nil {
		opts.Registerer = prometheus.NewRegistry()
	}
	return &Multiscaler{
		opts:      opts,
		log:       opts.Logger,
		metrics:   newMetrics(opts.Registerer),
		toZero:    opts.EnableScaleToZero == nil || *opts.EnableScaleToZero,
		collector: opts.Collector,
		runners:   map[revision.Key]*runner{},
	}
}

// OnDecision registers fn to receive published decisions. fn is called
// from the revision's loop (sequentially per revision, concurrently across
// revisions) with no lock held; it must be quick and must not block.
func (m *Multiscaler) OnDecision(fn func(Decision)) {
	m.subsMu.Lock()
	defer m.subsMu.Unlock()
	var next []func(Decision)
	if cur := m.subs.Load(); cur != nil {
		next = slices.Clone(*cur)
	}
	next = append(next, fn)
	m.subs.Store(&next)
}

// Run follows reg until ctx ends: it starts a loop for every valid
// revision, updates loops when specs change and stops (and forgets the
// collector data and metrics of) revisions that leave the registry. It
// returns nil when ctx ends, after every loop stopped, or an error if Run
// is already running.
func (m *Multiscaler) Run(ctx context.Context, reg *revision.Registry) error {
	if !m.running.CompareAndSwap(false, true) {
		return errors.New("autoscaler: Multiscaler.Run is already running")
	}
	defer m.running.Store(false)
	m.registry.Store(reg)
	expire := m.opts.Clock.NewTicker(expireInterval)
	defer expire.Stop()
	defer m.stopAll()
	for {
		ch := reg.Changed()
		m.sync(ctx, reg.Snapshot())
		if !m.waitChange(ctx, ch, expire) {
			return nil
		}
	}
}

// waitChange waits for ch, expiring idle collector data meanwhile; false
// when ctx ended.
func (m *Multiscaler) waitChange(ctx context.Context, ch <-chan struct{}, expire clock.Ticker) bool {
	for {
		select {
		case <-ctx.Done():
			return false
		case <-ch:
			return true
		case <-expire.C():
			m.collector.Expire(m.opts.Clock.Now())
		}
	}
}

// Poke asks for an immediate decision for key if it is at zero (a request
// arrived for it). It never blocks and never sends while holding a lock;
// pokes for unknown revisions, or while one is pending, are dropped.
func (m *Multiscaler) Poke(key revision.Key) {
	m.mu.RLock()
	r := m.runners[key]
	m.mu.RUnlock()
	if r == nil || !r.atZero.Load() {
		return
	}
	select {
	case r.poke <- struct{}{}:
	default:
	}
}

// Status returns the latest decision for key (published or not), and false
// when the revision is unknown or not yet decided.
func (m *Multiscaler) Status(key revision.Key) (Decision, bool) {
	m.mu.RLock()
	r := m.runners[key]
	m.mu.RUnlock()
	if r == nil {
		return Decision{}, false
	}
	if d := r.status.Load(); d != nil {
		return *d, true
	}
	return Decision{}, false
}

// Decisions returns the latest decision of every decided revision, sorted
// by namespace and name.
func (m *Multiscaler) Decisions() []Decision {
	m.mu.RLock()
	out := make([]Decision, 0, len(m.runners))
	for _, r := range m.runners {
		if d := r.status.Load(); d != nil {
			out = append(out, *d)
		}
	}
	m.mu.RUnlock()
	slices.SortFunc(out, func(a, b Decision) int {
		if a.Key.Namespace != b.Key.Namespace {
			return compareStrings(a.Key.Namespace, b.Key.Namespace)
		}
		return compareStrings(a.Key.Name, b.Key.Name)
	})
	return out
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// sync makes the running loops match snap.
func (m *Multiscaler) sync(ctx context.Context, snap *revision.Snapshot) {
	var gone []*runner
	m.mu.Lock()
	for k, rev := range snap.Revisions {
		if r := m.runners[k]; r != nil {
			r.setRevision(rev)
			continue
		}
		r := m.newRunner(rev)
		m.runners[k] = r
		m.wg.Add(1)
		go r.run(ctx)
	}
	for k, r := range m.runners {
		if snap.Revisions[k] == nil {
			delete(m.runners, k)
			gone = append(gone, r)
		}
	}
	m.mu.Unlock()
	for _, r := range gone {
		r.halt()
		m.metrics.forget(r.key)
		m.collector.Forget(r.key)
	}
}

func (m *Multiscaler) stopAll() {
	m.mu.Lock()
	rs := make([]*runner, 0, len(m.runners))
	for k, r := range m.runners {
		rs = append(rs, r)
		delete(m.runners, k)
	}
	m.mu.Unlock()
	for _, r := range rs {
		r.halt()
	}
	m.wg.Wait()
}

func (m *Multiscaler) publish(d Decision) {
	if reg := m.registry.Load(); reg != nil {
		reg.SetDesiredScale(d.Key, d.DesiredScale)
	}
	if subs := m.subs.Load(); subs != nil {
		for _, fn := range *subs {
			fn(d)
		}
	}
}
