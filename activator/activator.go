package activator

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"k8s.io/utils/clock"

	"github.com/thaw-dev/thaw/autoscaler"
	"github.com/thaw-dev/thaw/revision"
)

// DefaultPokeInterval is the shortest time between two pokes for one
// revision.
const DefaultPokeInterval = time.Second

// Options configures an Activator. Every field is optional.
type Options struct {
	Logger *zap.Logger
	// Clock drives hold timeouts, reports and probes (default real time).
	Clock clock.WithTicker
	// Poker is poked at once when a request starts waiting for a revision
	// that has no backend (nil: nobody is told).
	Poker autoscaler.Poker
	// Registerer registers the activator's metrics (nil: not registered).
	Registerer prometheus.Registerer
	// RevisionMetrics adds one series per revision and gauge
	// (thaw_activator_held_requests, _in_flight_requests, _pods, label
	// revision="namespace/name") to the sums over all revisions, which are
	// always exported. Off by default: at 100,000 revisions they were
	// 300,000 series and a 3-4 s scrape.
	RevisionMetrics bool
	// Probe, when set, makes a backend that appears in the registry take
	// traffic only after it answered one probe (see ProbeOptions). nil
	// trusts the platform's readiness.
	Probe *ProbeOptions
	// PokeInterval is the shortest time between two pokes for one revision
	// while its requests wait (default 1 s).
	PokeInterval time.Duration
	// MaxHeld bounds the requests held at once over all revisions (0: no
	// bound; SetMaxHeld changes it). A request that would be held beyond
	// it gets ErrHeldLimit: `thaw local` derives it from its Envoy's
	// open-file limit (docs/reliability.md, "Open files").
	MaxHeld int
}

// Pod is the backend Acquire chose.
type Pod struct {
	// Address is "ip:port" (IPv6 in brackets), the ORIGINAL_DST destination.
	Address string
	// Tracked is true when the revision limits requests per backend
	// (container concurrency > 0): the slot must then be released when the
	// request ends. When false, releasing at once only gives up the
	// least-loaded choice among backends (requests then rotate).
	Tracked bool
}

// AcquireOptions tunes one Acquire call.
type AcquireOptions struct {
	// OnHold (if not nil) is called once, synchronously, right before the
	// request starts waiting, so the caller can tell its client to wait
	// longer (extproc sends override_message_timeout). It is not called
	// when a backend has capacity at once.
	OnHold func()
	// MaxHold caps the revision's HoldTimeout for this request (0: no cap).
	// The timer is armed only when the request waits.
	MaxHold time.Duration
}

// Activator holds requests for revisions until one of their backends has
// capacity and picks that backend. Create it with New, feed it with Run and
// call Acquire per request. Safe for concurrent use.
type Activator struct {
	opts    Options
	log     *zap.Logger
	metrics *metrics

	// throttlers is an immutable map swapped whole by Run: the request path
	// reads it with one atomic load.
	throttlers atomic.Pointer[map[revision.Key]*throttler]
	// removed keeps deleted revisions' throttlers while requests they sent
	// are still in flight (for WaitIdle); pruned by Run.
	removed atomic.Pointer[map[revision.Key]*throttler]
	synced  chan struct{} // closed once Run applied a Synced snapshot

	shutting  atomic.Bool
	heldTotal atomic.Int64
	maxHeld   atomic.Int64
	limited   limitLog
	abort     chan struct{} // closed when the shutdown deadline passes
	drained   chan struct{} // closed when shutting and nothing is held
	abortOnce sync.Once
	drainOnce sync.Once
}

// New returns an Activator that knows no revision until Run applies a
// registry snapshot. Metrics are registered on opts.Registerer; New panics if
// that fails (duplicate registration is a wiring bug).
func New(opts Options) *Activator {
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.PokeInterval <= 0 {
		opts.PokeInterval = DefaultPokeInterval
	}
	if opts.Probe != nil {
		p := opts.Probe.withDefaults()
		opts.Probe = &p
	}
	a := &Activator{
		opts:    opts,
		log:     opts.Logger.Named("activator"),
		synced:  make(chan struct{}),
		abort:   make(chan struct{}),
		drained: make(chan struct{}),
	}
	a.maxHeld.Store(int64(max(opts.MaxHeld, 0)))
	a.throttlers.Store(&map[revision.Key]*throttler{})
	a.removed.Store(&map[revision.Key]*throttler{})
	a.metrics = newMetrics(a, opts.RevisionMetrics)
	if opts.Registerer != nil {
		if err := a.metrics.register(opts.Registerer); err != nil {
			panic(fmt.Sprintf("activator: register metrics: %v", err))
		}
	}
	return a
}

func (a *Activator) throttler(key revision.Key) *throttler {
	return (*a.throttlers.Load())[key]
}

// Acquire returns a backend of revision key with a free slot and the func
// that frees the slot (call it exactly once when the request ends; later
// calls do nothing). When no backend has capacity the request is held, for
// at most the revision's HoldTimeout or until ctx ends.
//
// Errors: ErrUnknownRevision, ErrQueueFull, ErrHeldLimit, ErrHoldTimeout, ErrShuttingDown,
// or ctx.Err() (wrapped) when ctx ends first.
func (a *Activator) Acquire(ctx context.Context, key revision.Key) (Pod, func(), error) {
	return a.AcquireNotify(ctx, key, nil)
}

// AcquireNotify is Acquire with a callback: onHold (if not nil) is called
// at most once, synchronously, right before the request starts waiting
// (for a backend, or for the first synced snapshot when the revision is
// not known yet), so the caller can tell its client to wait longer
// (extproc sends override_message_timeout). It is not called when a
// backend has capacity at once.
func (a *Activator) AcquireNotify(ctx context.Context, key revision.Key, onHold func()) (Pod, func(), error) {
	return a.AcquireWith(ctx, key, AcquireOptions{OnHold: onHold})
}

// AcquireWith is Acquire with options (see AcquireOptions). The fast path
// (a backend has a free slot) takes no lock, arms no timer and starts no
// goroutine.
func (a *Activator) AcquireWith(ctx context.Context, key revision.Key, o AcquireOptions) (Pod, func(), error) {
	if a.shutting.Load() {
		return Pod{}, nil, ErrShuttingDown
	}
	t := a.throttler(key)
	if t == nil {
		var err error
		if t, err = a.waitKnown(ctx, key, o.OnHold); err != nil {
			return Pod{}, nil, err
		}
		o.OnHold = nil // already told to wait
	}
	if p := t.tryFast(); p != nil {
		return a.granted(t, p)
	}
	return a.hold(ctx, t, o)
}

// waitKnown covers requests that arrive before the first synced snapshot:
// the revision may simply not be listed yet. onHold (if not nil) is called
// before waiting, like a held request's.
func (a *Activator) waitKnown(ctx context.Context, key revision.Key, onHold func()) (*throttler, error) {
	select {
	case <-a.synced:
		return nil, ErrUnknownRevision
	default:
	}
	if onHold != nil {
		onHold()
	}
	timer := a.opts.Clock.NewTimer(revision.DefaultHoldTimeout)
	defer timer.Stop()
	select {
	case <-a.synced:
	case <-timer.C():
	case <-ctx.Done():
		return nil, fmt.Errorf("activator: waiting for revisions: %w", ctx.Err())
	}
	if t := a.throttler(key); t != nil {
		return t, nil
	}
	return nil, ErrUnknownRevision
}

func (a *Activator) granted(t *throttler, p *podTracker) (Pod, func(), error) {
	t.inFlight.Add(1)
	g := &grant{t: t, p: p}
	return Pod{Address: p.addr, Tracked: t.state.Load().containerConcurrency > 0}, g.release, nil
}

// grant is one reserved slot; release frees it once.
type grant struct {
	t    *throttler
	p    *podTracker
	done atomic.Bool
}

func (g *grant) release() {
	if g.done.CompareAndSwap(false, true) {
		g.t.release(g.p)
	}
}

// hold queues the request until a slot is handed over, the hold timeout,
// ctx, revision removal or the shutdown deadline.
func (a *Activator) hold(ctx context.Context, t *throttler, o AcquireOptions) (Pod, func(), error) {
	held := a.heldTotal.Add(1)
	defer a.leftHold()
	if a.shutting.Load() {
		return Pod{}, nil, ErrShuttingDown
	}
	if limit := a.maxHeld.Load(); limit > 0 && held > limit {
		a.metrics.observeHold(outcomeOf(ErrHeldLimit), 0)
		a.limited.refused(a.log, t.key, limit, a.opts.Clock.Now())
		return Pod{}, nil, ErrHeldLimit
	}
	st := t.state.Load()
	if err := t.wakeError(a.opts.Clock.Now()); err != nil {
		a.metrics.observeHold(outcomeOf(err), 0)
		return Pod{}, nil, err
	}
	w, err := t.enqueue()
	if err != nil {
		a.metrics.observeHold(outcomeOf(err), 0)
		return Pod{}, nil, err
	}
	select {
	case <-w.ready:
		return a.granted(t, w.pod)
	default:
	}
	start := a.opts.Clock.Now()
	if len(t.state.Load().pods) == 0 {
		a.poke(t, start)
	}
	if o.OnHold != nil {
		o.OnHold()
	}
	wait := st.holdTimeout
	if o.MaxHold > 0 && o.MaxHold < wait {
		wait = o.MaxHold
	}
	timer := a.opts.Clock.NewTimer(wait)
	defer timer.Stop()
	for waiting := true; waiting; {
		// A wake failure ends the hold at once (wakeError); the channel is
		// taken before the check so one installed in between is seen.
		failed := t.failChan()
		if err = t.wakeError(a.opts.Clock.Now()); err != nil {
			break
		}
		waiting = false
		select {
		case <-w.ready:
			err = nil
		case <-timer.C():
			err = ErrHoldTimeout
		case <-ctx.Done():
			err = fmt.Errorf("activator: request gone while held: %w", ctx.Err())
		case <-t.gone:
			err = ErrUnknownRevision
		case <-a.abort:
			err = ErrShuttingDown
		case <-failed:
			waiting = true // wakeError decides; cleared meanwhile: wait on
		}
	}
	if p := t.leave(w); p != nil {
		if ctx.Err() != nil { // the caller is gone: give the slot back
			p.release()
			t.dispatch()
			err = fmt.Errorf("activator: request gone while held: %w", ctx.Err())
		} else {
			err = nil
		}
		if err == nil {
			a.metrics.observeHold(outcomeAcquired, a.opts.Clock.Since(start))
			return a.granted(t, p)
		}
	}
	a.metrics.observeHold(outcomeOf(err), a.opts.Clock.Since(start))
	return Pod{}, nil, err
}

// poke tells the autoscaler at once that a revision without backends has a
// waiting request; at most once per PokeInterval per revision.
func (a *Activator) poke(t *throttler, now time.Time) {
	if a.opts.Poker == nil {
		return
	}
	last := t.lastPoke.Load()
	if last != 0 && now.UnixNano()-last < int64(a.opts.PokeInterval) {
		return
	}
	if !t.lastPoke.CompareAndSwap(last, now.UnixNano()) {
		return
	}
	a.opts.Poker.Poke(t.key)
}

func outcomeOf(err error) string {
	switch {
	case err == nil:
		return outcomeAcquired
	case errors.Is(err, ErrQueueFull):
		return "queue_full"
	case errors.Is(err, ErrHeldLimit):
		return "held_limit"
	case errors.Is(err, ErrHoldTimeout):
		return "hold_timeout"
	case errors.Is(err, ErrShuttingDown):
		return "shutting_down"
	case errors.Is(err, ErrUnknownRevision):
		return "unknown_revision"
	case errors.Is(err, ErrWakeFailed):
		return "wake_failed"
	default:
		return "canceled"
	}
}
