package autoscaler

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/thaw-dev/thaw/revision"
)

// step takes one decision for st and applies it. It runs on st's decision loop
// and does not allocate unless the scale changes or something is logged.
// It reports whether the decision settled: only an input can change the
// next one (see settled; the loop may then let st go dormant).
func (m *Multiscaler) step(ctx context.Context, st *decisionState, poked bool) bool {
	st.loop.decisions.Add(1)
	if st.applying.Load() {
		// The previous decision's SetScale still runs; the next tick
		// decides again. A poke is kept for when it ends.
		if poked {
			st.repoke.Store(true)
			if !st.applying.Load() && st.repoke.Swap(false) {
				st.loop.poke(st)
			}
		}
		return false
	}
	now := m.opts.Clock.Now()
	spec := &st.rev.Load().Spec

	var current, ready int32
	var err error
	if st.scale != nil {
		current, ready, err = st.scale.Scale()
	} else {
		current, ready, err = m.opts.Target.GetScale(ctx, st.key)
	}
	if err != nil {
		st.countError(true)
		m.totals.getErrors.Add(1)
		m.reportError(st, "reading the scale target failed", err)
		return false
	}
	if !st.known {
		st.known, st.firstCurrent = true, current
	}
	st.atZero.Store(current == 0)

	// The KPA rules (no data: an invalid result, panic state kept).
	var res Result
	if stats, err := m.collector.stableAndPanicCached(&st.series, st.key, now, spec.StableWindow, spec.PanicWindow()); err != nil {
		res = Result{ReadyPods: ready, Err: err}
	} else {
		res = st.kpa.Step(spec, stats, ready, now)
	}
	in := GateInput{Now: now, Spec: spec, Result: res, Current: current, Ready: ready,
		Poked: poked, EnableScaleToZero: m.toZero}
	if m.opts.Confirmer != nil {
		in.ProxySince, in.ProxyConfirmed = st.proxyConfirmedSince(m.opts.Confirmer)
	}
	out := st.gate.Decide(in)
	st.warmUpFloor(&out, now, current, spec)
	var d Decision
	st.decision(&d, now, &res, &out, current, ready, spec)

	if d.DesiredScale != current {
		st.applying.Store(true)
		m.applies.Add(1)
		go m.apply(ctx, st, d, res, current)
		return false
	}
	m.finish(st, &d, &res, spec, nil)
	return m.settled(st, spec, now, poked, current, ready, &d, &res)
}

// proxyConfirmedSince asks c about st's proxy mode, or answers what c
// last answered when that was a confirmation and the revision did not
// change since (see ModeConfirmer).
func (st *decisionState) proxyConfirmedSince(c ModeConfirmer) (time.Time, bool) {
	if st.proxyStale.Load() && st.proxyStale.Swap(false) {
		st.proxyKnown = false
	}
	if st.proxyKnown {
		return st.proxySince, true
	}
	since, ok := c.ProxyConfirmedSince(st.key)
	st.proxySince, st.proxyKnown = since, ok
	return since, ok
}

// warmUpFloor keeps out.Desired at no less than current (within the max
// scale) during the revision's first stable window in this Run, when it had
// replicas when first seen: the windows do not yet hold a full window of
// data, so a scale-down would act on a partial view (issue: a restarted
// thaw halved a loaded revision).
func (st *decisionState) warmUpFloor(out *GateOutput, now time.Time, current int32, spec *revision.Spec) {
	if st.firstCurrent == 0 || out.Desired >= current || now.Sub(st.since) >= spec.StableWindow {
		return
	}
	floor := current
	if spec.MaxScale > 0 {
		floor = min(floor, spec.MaxScale)
	}
	if out.Desired < floor {
		out.Desired, out.Reason = floor, ReasonWarmingUp
	}
}

// apply sets the scale in its own goroutine (one per scale change, not per
// revision), then finishes the decision. Ticks skip the revision meanwhile.
func (m *Multiscaler) apply(ctx context.Context, st *decisionState, d Decision, res Result, current int32) {
	defer m.applies.Done()
	sctx, cancel := context.WithTimeout(ctx, m.opts.ScaleTimeout)
	err := m.opts.Target.SetScale(sctx, st.key, d.DesiredScale)
	cancel()
	spec := &st.rev.Load().Spec
	if err != nil {
		st.countError(false)
		m.totals.setErrors.Add(1)
		m.reportError(st, "setting the scale failed", err, zap.Int32("desired", d.DesiredScale))
	} else {
		st.mu.Lock()
		st.changes++
		st.mu.Unlock()
		m.totals.changes.Add(1)
		st.atZero.Store(d.DesiredScale == 0)
		st.logger(m).Info("scaled",
			zap.Int32("from", current), zap.Int32("to", d.DesiredScale),
			zap.Int32("recommended", d.Recommended), zap.Int32("ready", d.ReadyPods),
			zap.Float64("stable", res.StableValue), zap.Float64("panic", res.PanicValue),
			zap.Bool("panicking", d.InPanic), zap.String("reason", d.Reason))
	}
	m.finish(st, &d, &res, spec, err)
	st.applying.Store(false)
	if st.repoke.Swap(false) {
		st.loop.poke(st)
	}
}

// finish records a decision: panic transitions, status, publication.
func (m *Multiscaler) finish(st *decisionState, d *Decision, res *Result, spec *revision.Spec, applyErr error) {
	if applyErr == nil {
		st.lastErr = ""
	}
	if res.ScaleValid {
		if res.InPanic != st.inPanic {
			st.inPanic = res.InPanic
			if res.InPanic {
				st.logger(m).Info("entering panic mode", zap.Float64("panic", res.PanicValue), zap.Int32("ready", d.ReadyPods))
			} else {
				st.logger(m).Info("leaving panic mode", zap.Float64("stable", res.StableValue), zap.Int32("ready", d.ReadyPods))
			}
		}
		st.lastEBC, st.lastInPanic, st.hasLastValid = d.ExcessBurstCapacity, d.InPanic, true
	}
	if d.ActivationTimedOut && !st.published.activationTimedOut {
		m.totals.activationTimeouts.Add(1)
	}
	publish := !st.hasPublished || keyOf(d) != st.published
	st.mu.Lock()
	if st.stopped {
		st.mu.Unlock()
		return
	}
	st.status, st.hasStatus = *d, true
	st.target = max(spec.EffectiveTarget()*spec.TargetUtilizationPercentage/100, minTargetPerPod)
	st.mu.Unlock()
	if publish {
		st.published, st.hasPublished = keyOf(d), true
		m.publish(d)
	}
}

// decision fills d from one step's inputs and outputs.
func (st *decisionState) decision(d *Decision, now time.Time, res *Result, out *GateOutput, current, ready int32, spec *revision.Spec) {
	*d = Decision{
		Key: st.key, Time: now,
		DesiredScale: out.Desired, Recommended: out.Recommended, WantZero: out.WantZero, Reason: out.Reason,
		CurrentScale: current, ReadyPods: ready, ActivationTimedOut: out.ActivationTimedOut,
		ExcessBurstCapacity: res.ExcessBurstCapacity, InPanic: res.InPanic,
		StableConcurrency: res.Stats.StableConcurrency, PanicConcurrency: res.Stats.PanicConcurrency,
		StableRPS: res.Stats.StableRPS, PanicRPS: res.Stats.PanicRPS,
		Valid: res.ScaleValid,
	}
	if !res.ScaleValid {
		switch {
		case st.hasLastValid:
			d.ExcessBurstCapacity, d.InPanic = st.lastEBC, st.lastInPanic
		case spec.TargetBurstCapacity == 0:
			d.ExcessBurstCapacity = 0
		default:
			d.ExcessBurstCapacity = -1
		}
	}
}

// reportError logs err at Error level once per distinct message, so a
// persistently failing target does not flood the log.
func (m *Multiscaler) reportError(st *decisionState, msg string, err error, fields ...zap.Field) {
	if s := err.Error(); s != st.lastErr {
		st.lastErr = s
		st.logger(m).Error(msg, append(fields, zap.Error(err))...)
	}
}
