package autoscaler

import (
	"cmp"
	"context"
	"errors"
	"runtime"
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
	// maxShards caps the decision loops: one per CPU up to this many.
	maxShards = 8
)

// MultiscalerOptions configures a Multiscaler. Zero values take defaults.
type MultiscalerOptions struct {
	// Logger gets Info logs for scale changes and panic transitions, Error
	// logs for scale target failures (once per distinct error). Default:
	// no logs.
	Logger *zap.Logger
	// Clock drives the decision loops and stamps decisions. Default: real
	// clock.
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
	// Registerer receives the autoscaler's metrics (read at scrape time).
	// Default: a private registry (metrics not exported). When a second
	// Multiscaler registers on the same registry, the first one's metrics
	// stay and the second's are not exported.
	Registerer prometheus.Registerer
	// RevisionMetrics adds one series per revision and metric (label
	// revision="namespace/name", the Metric* names) to the cluster-wide
	// aggregates, which are always exported. Off by default: at 10,000
	// revisions they are 130,000 series.
	RevisionMetrics bool
	// ScaleTimeout bounds each ScaleTarget.SetScale call (default 10 s).
	// GetScale runs every tick for every revision with the loop's context
	// only: implementations should answer it from a cache.
	ScaleTimeout time.Duration
	// Recorder records each published decision in the registry: the
	// desired scale and the mode it implies in one update
	// (control.Controller implements it; nil: decisions reach only the
	// OnDecision subscribers). It runs on the deciding loop, before
	// OnDecision subscribers, and must not block.
	Recorder DecisionRecorder
	// Shards is the number of decision loops (default GOMAXPROCS, at most
	// 8). Each revision belongs to one loop.
	Shards int

	// keepTicking decides every revision every tick, dormant or not (the
	// cost before dormancy; benchmarks compare the two in one run).
	keepTicking bool
	// tickWarmWindows decides revisions whose wake policy has warm
	// windows every tick at zero instead of letting them sleep until
	// their alarm (the cost before alarms, for benchmarks).
	tickWarmWindows bool
}

// DecisionRecorder records a published decision in the registry (desired
// scale, and whatever else it derives from it) in one update. d is passed
// by value: the deciding loop allocates nothing per decision.
type DecisionRecorder interface {
	RecordDecision(d Decision)
}

// Multiscaler decides every revision of a revision.Registry from a few
// clock-driven loops (Shards, sized by GOMAXPROCS): each revision is decided
// every TickInterval from when it was first seen, or at once when poked
// while at zero; no goroutine, timer or channel exists per revision. A
// revision at zero with nothing to decide is dormant instead: out of the
// loops until a sample, a registry change or a poke wakes it (doc.go). A
// decision reads the scale target, runs the KPA rules and the Gate, applies
// the result through ScaleTarget.SetScale when it differs from the current
// replicas (in a goroutine of its own, so a slow API server delays only that
// revision), records it in the registry (Recorder) and tells
// OnDecision subscribers when the desired or recommended scale, WantZero,
// validity or the sign of the excess burst capacity changed. A failing
// revision is reported (log, metric) without affecting others.
//
// During its first stable window in a Run (thaw restarted, or this replica
// just became the leader), a revision that had replicas when first seen is
// never scaled below its current replicas: the windows hold less data than
// they span, so a restart never moves a revision's scale down.
type Multiscaler struct {
	opts      MultiscalerOptions
	log       *zap.Logger
	toZero    bool
	collector *Collector
	totals    totals

	mu     sync.RWMutex
	states map[revision.Key]*decisionState
	shards []*loopShard
	next   int // round-robin loop for new revisions

	subsMu sync.Mutex
	subs   atomic.Pointer[[]func(Decision)]

	running atomic.Bool
	wg      sync.WaitGroup // decision loops
	applies sync.WaitGroup // scale applications in flight
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
	if opts.Shards <= 0 {
		opts.Shards = min(runtime.GOMAXPROCS(0), maxShards)
	}
	if opts.Registerer == nil {
		opts.Registerer = prometheus.NewRegistry()
	}
	m := &Multiscaler{
		opts:      opts,
		log:       opts.Logger,
		toZero:    opts.EnableScaleToZero == nil || *opts.EnableScaleToZero,
		collector: opts.Collector,
		states:    map[revision.Key]*decisionState{},
	}
	registerMetrics(opts.Registerer, newMetricsCollector(m, opts.RevisionMetrics))
	opts.Collector.addWaker(m.wakeKey) // samples wake dormant revisions
	return m
}

// OnDecision registers fn to receive published decisions. fn is called
// from a decision loop (sequentially per revision, concurrently across
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

// Run follows reg until ctx ends: it decides every valid revision, follows
// spec changes and forgets (collector data and metrics included) revisions
// that leave the registry. It returns nil when ctx ends, after every loop
// and scale application stopped, or an error if Run is already running.
func (m *Multiscaler) Run(ctx context.Context, reg *revision.Registry) error {
	if !m.running.CompareAndSwap(false, true) {
		return errors.New("autoscaler: Multiscaler.Run is already running")
	}
	defer m.running.Store(false)
	loopCtx, cancel := context.WithCancel(ctx)
	m.startShards(loopCtx)
	defer m.stopAll(cancel)
	expire := m.opts.Clock.NewTicker(expireInterval)
	defer expire.Stop()
	var prev *revision.Snapshot
	for {
		ch := reg.Changed()
		snap := reg.Snapshot()
		m.sync(prev, snap)
		prev = snap
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
	st := m.states[key]
	m.mu.RUnlock()
	if st == nil || !st.atZero.Load() {
		return
	}
	st.inputs.Add(1) // a dormant revision is queued back after its poked decision
	st.loop.poke(st)
}

// Status returns the latest decision for key (published or not), and false
// when the revision is unknown or not yet decided.
func (m *Multiscaler) Status(key revision.Key) (Decision, bool) {
	m.mu.RLock()
	st := m.states[key]
	m.mu.RUnlock()
	if st == nil {
		return Decision{}, false
	}
	return st.latest()
}

// Decisions returns the latest decision of every decided revision, sorted
// by namespace and name.
func (m *Multiscaler) Decisions() []Decision {
	m.mu.RLock()
	out := make([]Decision, 0, len(m.states))
	for _, st := range m.states {
		if d, ok := st.latest(); ok {
			out = append(out, d)
		}
	}
	m.mu.RUnlock()
	slices.SortFunc(out, func(a, b Decision) int {
		if a.Key.Namespace != b.Key.Namespace {
			return cmp.Compare(a.Key.Namespace, b.Key.Namespace)
		}
		return cmp.Compare(a.Key.Name, b.Key.Name)
	})
	return out
}

// sync makes the decided revisions match snap: new ones go to a loop,
// changed specs are swapped in, deleted ones are halted and forgotten. Only
// the keys changed since prev (the snapshot synced last) are visited.
func (m *Multiscaler) sync(prev, snap *revision.Snapshot) {
	var gone, added, woken []*decisionState
	now := m.opts.Clock.Now()
	m.mu.Lock()
	for k := range snap.Changes(prev) {
		rev, st := snap.Get(k), m.states[k]
		switch {
		case rev == nil && st != nil:
			delete(m.states, k)
			gone = append(gone, st)
		case rev == nil:
		case st != nil:
			if st.rev.Load() != rev { // a store (write barrier) only on change
				st.rev.Store(rev)
			}
			st.proxyStale.Store(true)
			woken = append(woken, st)
		default:
			st = m.newState(rev, now)
			m.states[k] = st
			added = append(added, st)
		}
	}
	m.mu.Unlock()
	for _, st := range added {
		st.loop.add(st)
	}
	for _, st := range woken {
		st.wake() // its registry entry changed: decide it again
	}
	for _, st := range gone {
		st.halt()
		st.wake() // one dormant until its alarm leaves its loop's heap now
		m.collector.Forget(st.key)
	}
}

func (m *Multiscaler) newState(rev *revision.Revision, now time.Time) *decisionState {
	st := newRevState(rev, now, m.shards[m.next%len(m.shards)])
	if h, ok := m.opts.Target.(ScaleHandles); ok {
		if r, ok := h.ScaleHandle(rev.Key); ok {
			st.scale = r
		}
	}
	m.next++
	return st
}

// stopAll ends the loops and halts every revision: nothing is published
// after it returns.
func (m *Multiscaler) stopAll(cancel context.CancelFunc) {
	cancel()
	m.mu.Lock()
	sts := make([]*decisionState, 0, len(m.states))
	for _, st := range m.states {
		sts = append(sts, st)
	}
	clear(m.states)
	m.mu.Unlock()
	for _, st := range sts {
		st.halt()
	}
	m.wg.Wait()
	m.applies.Wait()
	m.mu.Lock()
	for _, sh := range m.shards {
		m.totals.pastDecisions.Add(sh.decisions.Load())
	}
	m.shards = nil
	m.mu.Unlock()
}

func (m *Multiscaler) publish(d *Decision) {
	if m.opts.Recorder != nil {
		m.opts.Recorder.RecordDecision(*d)
	}
	if subs := m.subs.Load(); subs != nil {
		for _, fn := range *subs {
			fn(*d)
		}
	}
}
