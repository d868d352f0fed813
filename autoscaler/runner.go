package autoscaler

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/thaw-dev/thaw/revision"
)

// runner is one revision's decision loop.
type runner struct {
	m       *Multiscaler
	key     revision.Key
	log     *zap.Logger
	rev     atomic.Pointer[revision.Revision]
	decider *Decider
	met     *revMetrics
	poke    chan struct{}
	stopCh  chan struct{}
	atZero  atomic.Bool // last seen replicas were 0 (true until known)
	status  atomic.Pointer[Decision]

	mu      sync.Mutex // orders publication against halt
	stopped bool

	// Owned by the loop goroutine.
	gate      *Gate
	ready     int32
	published *Decision
	lastValid *Decision
	lastErr   string
	inPanic   bool
}

func (m *Multiscaler) newRunner(rev *revision.Revision) *runner {
	r := &runner{
		m:      m,
		key:    rev.Key,
		log:    m.log.WithLazy(zap.String("revision", rev.Key.String())),
		met:    m.metrics.forRevision(rev.Key),
		poke:   make(chan struct{}, 1),
		stopCh: make(chan struct{}),
		gate:   NewGate(m.opts.Clock.Now()),
	}
	r.rev.Store(rev)
	r.atZero.Store(true)
	r.decider = NewDecider(rev.Key, rev.Spec, m.collector, func() int32 { return r.ready })
	return r
}

func (r *runner) setRevision(rev *revision.Revision) {
	if r.rev.Swap(rev) != rev {
		r.decider.UpdateSpec(rev.Spec)
	}
}

// halt stops the loop; no decision is published after it returns.
func (r *runner) halt() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.stopped {
		r.stopped = true
		close(r.stopCh)
	}
}

func (r *runner) run(ctx context.Context) {
	defer r.m.wg.Done()
	t := r.m.opts.Clock.NewTicker(r.m.opts.TickInterval)
	defer t.Stop()
	r.step(ctx, false)
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.stopCh:
			return
		case <-t.C():
			r.step(ctx, false)
		case <-r.poke:
			r.step(ctx, true)
		}
	}
}

// step takes one decision and applies it.
func (r *runner) step(ctx context.Context, poked bool) {
	m := r.m
	now := m.opts.Clock.Now()
	spec := &r.rev.Load().Spec

	current, ready, err := m.opts.Target.GetScale(ctx, r.key)
	if err != nil {
		r.met.getErrors.Inc()
		r.reportError("reading the scale target failed", err)
		return
	}
	r.ready = ready
	r.atZero.Store(current == 0)

	res := r.decider.Scale(now)
	in := GateInput{Now: now, Spec: spec, Result: res, Current: current, Ready: ready,
		Poked: poked, EnableScaleToZero: m.toZero}
	if m.opts.Confirmer != nil {
		in.ProxySince, in.ProxyConfirmed = m.opts.Confirmer.ProxyConfirmedSince(r.key)
	}
	out := r.gate.Decide(in)
	d := r.decision(now, res, out, current, spec)

	applyErr := error(nil)
	if d.DesiredScale != current {
		if applyErr = r.setScale(ctx, d.DesiredScale); applyErr != nil {
			r.met.setErrors.Inc()
			r.reportError("setting the scale failed", applyErr, zap.Int32("desired", d.DesiredScale))
		} else {
			r.met.changes.Inc()
			r.atZero.Store(d.DesiredScale == 0)
			r.log.Info("scaled",
				zap.Int32("from", current), zap.Int32("to", d.DesiredScale),
				zap.Int32("recommended", d.Recommended), zap.Int32("ready", ready),
				zap.Float64("stable", res.StableValue), zap.Float64("panic", res.PanicValue),
				zap.Bool("panicking", d.InPanic), zap.String("reason", d.Reason))
		}
	}
	if applyErr == nil {
		r.lastErr = ""
	}
	if res.ScaleValid {
		if res.InPanic != r.inPanic {
			r.inPanic = res.InPanic
			if res.InPanic {
				r.log.Info("entering panic mode", zap.Float64("panic", res.PanicValue), zap.Int32("ready", ready))
			} else {
				r.log.Info("leaving panic mode", zap.Float64("stable", res.StableValue), zap.Int32("ready", ready))
			}
		}
		r.lastValid = &d
	}

	r.mu.Lock()
	if r.stopped {
		r.mu.Unlock()
		return
	}
	r.met.observe(&d, r.status.Load(), max(spec.EffectiveTarget()*spec.TargetUtilizationPercentage/100, minTargetPerPod))
	r.status.Store(&d)
	publish := d.changedFrom(r.published)
	if publish {
		r.published = &d
	}
	r.mu.Unlock()
	if publish {
		m.publish(d)
	}
}

func (r *runner) decision(now time.Time, res Result, out GateOutput, current int32, spec *revision.Spec) Decision {
	d := Decision{
		Key: r.key, Time: now,
		DesiredScale: out.Desired, Recommended: out.Recommended, WantZero: out.WantZero, Reason: out.Reason,
		CurrentScale: current, ReadyPods: r.ready,
		ExcessBurstCapacity: res.ExcessBurstCapacity, InPanic: res.InPanic,
		StableConcurrency: res.Stats.StableConcurrency, PanicConcurrency: res.Stats.PanicConcurrency,
		StableRPS: res.Stats.StableRPS, PanicRPS: res.Stats.PanicRPS,
		Valid: res.ScaleValid,
	}
	if !res.ScaleValid {
		switch prev := r.lastValid; {
		case prev != nil:
			d.ExcessBurstCapacity, d.InPanic = prev.ExcessBurstCapacity, prev.InPanic
		case spec.TargetBurstCapacity == 0:
			d.ExcessBurstCapacity = 0
		default:
			d.ExcessBurstCapacity = -1
		}
	}
	return d
}

func (r *runner) setScale(ctx context.Context, replicas int32) error {
	ctx, cancel := context.WithTimeout(ctx, r.m.opts.ScaleTimeout)
	defer cancel()
	return r.m.opts.Target.SetScale(ctx, r.key, replicas)
}

// reportError logs err at Error level once per distinct message, so a
// persistently failing target does not flood the log.
func (r *runner) reportError(msg string, err error, fields ...zap.Field) {
	if s := err.Error(); s != r.lastErr {
		r.lastErr = s
		r.log.Error(msg, append(fields, zap.Error(err))...)
	}
}
