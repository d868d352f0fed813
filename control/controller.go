package control

import (
	"context"
	"sync"
	"time"

	"go.uber.org/zap"
	"k8s.io/utils/clock"

	"github.com/thaw-dev/thaw/autoscaler"
	"github.com/thaw-dev/thaw/revision"
)

// Confirmer reports whether every connected Envoy acknowledged a revision's
// routing at a generation (the xds server implements it).
type Confirmer interface {
	ConfirmedEverywhere(key revision.Key, generation uint64) bool
}

// Options configures a Controller.
type Options struct {
	Logger    *zap.Logger
	Clock     clock.Clock
	Registry  *revision.Registry
	Confirmer Confirmer
}

// Controller keeps each revision's mode in the registry in line with the
// latest decider recommendation and its ready backends. It implements
// autoscaler.ModeConfirmer.
type Controller struct {
	opts Options

	// reconcileMu serialises reconciles so two callers never act on the
	// same stale snapshot (one mode change, logged once).
	reconcileMu sync.Mutex

	mu    sync.Mutex
	recs  map[revision.Key]Recommendation
	proxy map[revision.Key]confirmation
}

// confirmation records when proxy mode at a generation was first seen
// confirmed by every Envoy.
type confirmation struct {
	generation uint64
	at         time.Time
}

var _ autoscaler.ModeConfirmer = (*Controller)(nil)

// New returns a Controller. Registry and Confirmer are required.
func New(opts Options) *Controller {
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	return &Controller{opts: opts, recs: map[revision.Key]Recommendation{}, proxy: map[revision.Key]confirmation{}}
}

// RecordDecision implements autoscaler.DecisionRecorder: it records the
// decision's recommendation and writes the desired scale together with the
// mode it implies, one registry update per decision, and reports or clears
// an activation timeout as a wake failure (recordActivation).
func (c *Controller) RecordDecision(d autoscaler.Decision) {
	c.mu.Lock()
	c.recs[d.Key] = Recommendation{Valid: d.Valid, WantZero: d.WantZero, ExcessBurstCapacity: d.ExcessBurstCapacity}
	c.mu.Unlock()
	desired := d.DesiredScale
	c.reconcile(d.Key, &desired)
	c.recordActivation(&d)
}

// Run re-evaluates modes whenever the registry changes (backends appear or
// vanish) until ctx ends. Only the revisions changed since the last
// snapshot it handled are visited.
func (c *Controller) Run(ctx context.Context) {
	var prev *revision.Snapshot
	for {
		ch := c.opts.Registry.Changed()
		snap := c.opts.Registry.Snapshot()
		for key := range snap.Changes(prev) {
			if snap.Get(key) != nil {
				c.reconcile(key, nil)
			} else {
				c.forget(key)
			}
		}
		prev = snap
		select {
		case <-ctx.Done():
			return
		case <-ch:
		}
	}
}

// reconcile chooses key's mode from its latest state and recommendation
// and writes it; with desired set, the desired scale goes in the same
// registry update.
func (c *Controller) reconcile(key revision.Key, desired *int32) {
	c.reconcileMu.Lock()
	defer c.reconcileMu.Unlock()
	// The registry publishes synchronously or after a short holdoff; read
	// the latest state rather than the caller's.
	rev := c.opts.Registry.Snapshot().Get(key)
	if rev == nil {
		c.forget(key) // a recommendation that raced the revision's removal
		return
	}
	c.mu.Lock()
	rec, ok := c.recs[rev.Key]
	c.mu.Unlock()
	var recp *Recommendation
	if ok {
		recp = &rec
	}
	mode := ChooseMode(&rev.Spec, len(rev.ReadyBackends()), recp)
	// One locked compare-and-set: it records nothing when the revision was
	// deleted (or deleted and created again) since rev was read.
	current, ok := c.opts.Registry.SetDecision(rev, desired, mode)
	if !ok || mode == current {
		return
	}
	c.opts.Logger.Info("mode change", zap.String("revision", rev.Key.String()),
		zap.Stringer("from", current), zap.Stringer("to", mode),
		zap.Int("readyBackends", len(rev.ReadyBackends())))
	if mode != revision.ModeProxy {
		c.mu.Lock()
		delete(c.proxy, rev.Key) // a later proxy period starts its own clock
		c.mu.Unlock()
	}
}

// forget drops what is kept for a revision that left the registry (or
// became invalid).
func (c *Controller) forget(key revision.Key) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.recs, key)
	delete(c.proxy, key)
}

// ProxyConfirmedSince returns when the revision's current proxy-mode routing
// was first seen acknowledged by every connected Envoy. ok is false while
// the revision is in serve mode, unknown, or not yet confirmed everywhere.
//
// A confirmation is keyed by the Generation it confirmed and counts only
// while the revision has stayed in proxy mode since (its ModeGeneration is
// not newer): a proxy → serve → proxy bounce between two calls (within one
// autoscaler tick) starts a new period that needs its own ACKs.
func (c *Controller) ProxyConfirmedSince(key revision.Key) (time.Time, bool) {
	rev := c.opts.Registry.Snapshot().Get(key)
	c.mu.Lock()
	defer c.mu.Unlock()
	if rev == nil || rev.Mode != revision.ModeProxy {
		delete(c.proxy, key)
		return time.Time{}, false
	}
	// Once confirmed, the revision stays confirmed while it stays in proxy
	// mode: backend changes in proxy mode keep the activator endpoint first
	// in Envoy's routing.
	if conf, ok := c.proxy[key]; ok {
		if conf.generation >= rev.ModeGeneration && conf.generation <= rev.Generation {
			return conf.at, true
		}
		delete(c.proxy, key) // confirmed an earlier proxy period
	}
	if !c.opts.Confirmer.ConfirmedEverywhere(key, rev.Generation) {
		return time.Time{}, false
	}
	now := c.opts.Clock.Now()
	c.proxy[key] = confirmation{generation: rev.Generation, at: now}
	return now, true
}
