package autoscaler

import (
	"time"

	"github.com/thaw-dev/thaw/revision"
)

// Dormant revisions.
//
// A revision at zero with nothing to decide costs its loop nothing: after a
// tick whose decision is a fixed point (settled), it leaves the loop's due
// heap and is dormant. Its decision cannot change until one of these
// inputs arrives, and each of them wakes it (wake), queueing it back on
// its loop, where it is decided at once and then every tick again:
//
//   - a sample for it (the stats sink, the module's held counts, the
//     ext_proc hold path's report): its collector series, watched while it
//     is dormant, or the creation of a series for it;
//   - a change of its registry entry (spec, backends, mode, desired scale,
//     wake failure), seen by the Multiscaler's sync;
//   - a poke (a request held at zero), decided at once as before.
//
// A revision whose wake policy has warm windows also wakes at its alarm:
// the next time one of its windows opens or closes (wake.Policy.NextChange,
// in each window's time zone). It stays in its loop's due heap, ordered by
// that time, so one timer per loop serves every alarm: no goroutine or
// timer per revision. An input before the alarm moves it to now; the
// alarm recomputes from the spec each time the revision settles, so a
// changed policy (a registry change, which wakes it) takes effect at once.
// A revision deleted while waiting is taken out of the heap by the wake
// that Multiscaler.sync sends it after halting it.
//
// The proxy-mode confirmation is not among them: at zero replicas the Gate
// does not read it. A revision whose replicas are raised by someone else
// (kubectl scale) is woken when its backends change in the registry.
//
// One writer per fact: the decision loop alone sets dormant (sleep); an
// input clears it with a CompareAndSwap, and whoever clears it queues the
// revision back, so it is in the heap at most once.

// settled reports whether a tick's decision at now is a fixed point that
// only an input or the wake policy's clock can move: at zero replicas
// (none desired, recommended or ready), no stats in the stable window
// (ErrNoData), not waking (no activation in progress), no poke. Min-scale,
// initial scale, scale to zero being off and an open warm window all make
// the recommendation non-zero, so they never settle. It sets st.alarm to
// when the policy's warm windows next open or close (wake.Policy.NextChange;
// zero when it has none, or none will ever change again).
func (m *Multiscaler) settled(st *decisionState, spec *revision.Spec, now time.Time, poked bool, current, ready int32, d *Decision, res *Result) bool {
	st.alarm = time.Time{}
	if m.opts.keepTicking || poked || current != 0 || ready != 0 || d.DesiredScale != 0 || d.Recommended != 0 {
		return false
	}
	if res.ScaleValid || res.Err != ErrNoData || st.gate.activating() {
		return false
	}
	if spec.Wake == nil || len(spec.Wake.Windows) == 0 {
		return true
	}
	if m.opts.tickWarmWindows {
		return false
	}
	st.alarm = spec.Wake.NextChange(now)
	return true
}

// sleep makes st dormant after a tick at now that settled; inputs0 is
// st.inputs before that tick. It reports whether st leaves its ticks: it
// is dormant (out of the due heap, or in it until st.alarm), or an input
// woke it meanwhile and queued it back (rejoin). It returns false, st
// ticking on, when an input arrived since the tick or its series holds
// data a later window can reach.
func (sh *loopShard) sleep(st *decisionState, inputs0 uint64, now time.Time) bool {
	st.dormant.Store(true)
	// An input from here on sees dormant and queues st back; one that came
	// before changed inputs or the series, checked now.
	spec := &st.rev.Load().Spec
	if st.inputs.Load() == inputs0 && sh.m.collector.watch(&st.series, st.key, now, spec.StableWindow) {
		return true
	}
	if st.dormant.CompareAndSwap(true, false) {
		return false
	}
	return true // an input took it: it is queued back
}

// wake records an input for st and queues st back on its loop when it is
// dormant. It never blocks.
func (st *decisionState) wake() {
	st.inputs.Add(1)
	if st.dormant.Load() && st.dormant.CompareAndSwap(true, false) {
		st.loop.rejoin(st)
	}
}

// wakeKey wakes key's revision if it is dormant (the collector's waker).
func (m *Multiscaler) wakeKey(key revision.Key) {
	m.mu.RLock()
	st := m.states[key]
	m.mu.RUnlock()
	if st != nil {
		st.wake()
	}
}

// Dormant reports whether key's revision is dormant: at zero with nothing
// to decide, out of the decision loops until an input wakes it.
func (m *Multiscaler) Dormant(key revision.Key) bool {
	m.mu.RLock()
	st := m.states[key]
	m.mu.RUnlock()
	return st != nil && st.dormant.Load()
}

// addWaker registers fn to be told when a watched series gets a sample or
// a series is created.
func (c *Collector) addWaker(fn func(revision.Key)) {
	for {
		cur := c.wakers.Load()
		var next []func(revision.Key)
		if cur != nil {
			next = append(next, *cur...)
		}
		next = append(next, fn)
		if c.wakers.CompareAndSwap(cur, &next) {
			return
		}
	}
}

func (c *Collector) wakeAll(key revision.Key) {
	if ws := c.wakers.Load(); ws != nil {
		for _, fn := range *ws {
			fn(key)
		}
	}
}

// watch marks key's series so that its next sample wakes the revision,
// and reports whether no window from now on can reach data the series
// holds (none, or all older than the stable window): true also when there
// is no series, whose creation wakes it. *cached is the loop's cached
// series (see stableAndPanicCached).
func (c *Collector) watch(cached **series, key revision.Key, now time.Time, stableWindow time.Duration) bool {
	ser := *cached
	if ser == nil || ser.dropped.Load() {
		ser = c.series(key, false)
		*cached = ser
		if ser == nil {
			return true
		}
	}
	ns := min(ceilSeconds(stableWindow), maxRingSeconds)
	ser.mu.Lock()
	defer ser.mu.Unlock()
	if ser.dropped.Load() {
		// Forgotten or expired meanwhile: a new sample creates a new
		// series, which wakes the revision.
		return true
	}
	if ser.hasData && ser.last >= now.Unix()-ns {
		return false
	}
	ser.watched = true
	return true
}
