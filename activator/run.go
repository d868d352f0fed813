package activator

import (
	"context"
	"maps"
	"slices"

	"go.uber.org/zap"

	"github.com/thaw-dev/thaw/revision"
)

// revState is what Run keeps per revision; only the Run goroutine touches it.
type revState struct {
	t   *throttler
	key revision.Key
	// base is the activator's logger; log() adds the revision (built on
	// demand: logging is rare, and a logger per revision up front costs
	// ~0.5 KiB each at 10,000 revisions).
	base *zap.Logger
	rev  *revision.Revision // last applied
	// trackers holds the trackers of current backends and of retired ones
	// that may still have requests in flight (a retired tracker is reused if
	// its address comes back, so its count stays right). The four maps are
	// made at their first write (most revisions idle at zero never get one).
	trackers map[string]*podTracker
	retired  map[string]bool
	// probes: address -> cancel of a running probe; probed: addresses that
	// answered.
	probes map[string]context.CancelFunc
	probed map[string]bool
}

// Run applies registry snapshots to the throttlers until ctx ends: it
// creates and removes revisions, updates limits (ContainerConcurrency,
// HoldTimeout, QueueDepth) and the ready backends. Changes never disturb
// requests in flight: pod trackers survive while their backend stays. Call
// it once.
func (a *Activator) Run(ctx context.Context, reg *revision.Registry) {
	revs := map[revision.Key]*revState{}
	probeDone := make(chan probeResult)
	defer func() {
		for _, rs := range revs {
			for _, cancel := range rs.probes {
				cancel()
			}
		}
	}()
	var prev *revision.Snapshot
	var dirty []*revState // a probe finished: rebuild even if rev did not change
	for {
		changed := reg.Changed()
		snap := reg.Snapshot()
		a.apply(ctx, prev, snap, revs, dirty, probeDone)
		prev, dirty = snap, dirty[:0]
		select {
		case <-ctx.Done():
			return
		case <-changed:
		case r := <-probeDone:
			if _, running := r.rs.probes[r.addr]; running {
				r.rs.probed = setTrue(r.rs.probed, r.addr)
				dirty = append(dirty, r.rs)
				r.rs.log().Info("backend answered probe", zap.String("backend", r.addr))
			}
		}
	}
}

// apply brings revs in line with snap, visiting only the revisions changed
// since prev (the snapshot applied last) and those in dirty.
func (a *Activator) apply(ctx context.Context, prev, snap *revision.Snapshot, revs map[revision.Key]*revState,
	dirty []*revState, probeDone chan<- probeResult) {
	keysChanged := false
	removed := maps.Clone(*a.removed.Load()) // small: deleted revisions with requests in flight
	for key, t := range removed {
		if t.inFlight.Load() == 0 || snap.Get(key) != nil {
			delete(removed, key)
		}
	}
	for key := range snap.Changes(prev) {
		rev, rs := snap.Get(key), revs[key]
		switch {
		case rev == nil && rs != nil:
			for _, cancel := range rs.probes {
				cancel()
			}
			rs.t.remove()
			delete(revs, key)
			keysChanged = true
			if rs.t.inFlight.Load() > 0 {
				removed[key] = rs.t
			}
			rs.log().Info("revision removed; held requests fail", zap.Int64("held", rs.t.waiting.Load()))
		case rev == nil:
		case rs == nil:
			rs = &revState{t: newThrottler(key, limitsOf(&rev.Spec)), key: key, base: a.log}
			revs[key] = rs
			keysChanged = true
			rs.rev = rev
			a.update(ctx, rs, rev, probeDone)
		case rs.rev != rev:
			rs.rev = rev
			a.update(ctx, rs, rev, probeDone)
		}
	}
	for _, rs := range dirty {
		if revs[rs.key] == rs && rs.rev == snap.Get(rs.key) { // not replaced or removed meanwhile
			a.update(ctx, rs, rs.rev, probeDone)
		}
	}
	if keysChanged {
		m := make(map[revision.Key]*throttler, len(revs))
		for k, rs := range revs {
			m[k] = rs.t
		}
		a.throttlers.Store(&m)
	}
	if !maps.Equal(removed, *a.removed.Load()) {
		a.removed.Store(&removed)
	}
	if snap.Synced {
		select {
		case <-a.synced:
		default:
			close(a.synced)
		}
	}
}

// update rebuilds one revision's throttler state from its backends.
func (a *Activator) update(ctx context.Context, rs *revState, rev *revision.Revision, probeDone chan<- probeResult) {
	ready := make(map[string]bool, len(rev.Backends))
	var pods []*podTracker
	for _, b := range rev.Backends {
		if !b.Ready {
			continue
		}
		addr := b.HostPort()
		ready[addr] = true
		if a.opts.Probe != nil && !rs.probed[addr] {
			if _, running := rs.probes[addr]; !running {
				pctx, cancel := context.WithCancel(ctx)
				if rs.probes == nil {
					rs.probes = map[string]context.CancelFunc{}
				}
				rs.probes[addr] = cancel
				go a.probe(pctx, rs, addr, probeDone)
			}
			continue
		}
		tr := rs.trackers[addr]
		if tr == nil {
			tr = newPodTracker(addr)
			if rs.trackers == nil {
				rs.trackers = map[string]*podTracker{}
			}
			rs.trackers[addr] = tr
		}
		delete(rs.retired, addr)
		pods = append(pods, tr)
	}
	for addr, cancel := range rs.probes {
		if !ready[addr] {
			cancel()
			delete(rs.probes, addr)
			delete(rs.probed, addr)
		}
	}
	var retired []*podTracker
	inPods := make(map[string]bool, len(pods))
	for _, p := range pods {
		inPods[p.addr] = true
	}
	for _, addr := range slices.Sorted(maps.Keys(rs.trackers)) {
		tr := rs.trackers[addr]
		if inPods[addr] {
			continue
		}
		// Drop a retired tracker only at a later update with nothing in
		// flight: a pick that loaded the previous state may still reserve on
		// it right after this update.
		if rs.retired[addr] && tr.inFlight.Load() == 0 {
			delete(rs.trackers, addr)
			delete(rs.retired, addr)
			continue
		}
		rs.retired = setTrue(rs.retired, addr)
		retired = append(retired, tr)
	}
	st := &tstate{limits: limitsOf(&rev.Spec), failure: rev.WakeFailure, pods: pods, retired: retired}
	old := rs.t.state.Load()
	if old.limits == st.limits && old.failure == st.failure && slices.Equal(old.pods, st.pods) && slices.Equal(old.retired, st.retired) {
		return
	}
	rs.t.setState(st)
	if st.failure != old.failure && st.failure != nil {
		rs.log().Info("wake-up failed: held and new requests are answered at once until the next attempt",
			zap.String("reason", st.failure.Reason), zap.String("message", st.failure.Message),
			zap.Int("pods", len(pods)), zap.Int64("held", rs.t.waiting.Load()))
	}
	if len(old.pods) != len(pods) || old.limits != st.limits {
		rs.log().Info("throttler updated", zap.Int("pods", len(pods)), zap.Int("retired", len(retired)),
			zap.Int("containerConcurrency", st.containerConcurrency), zap.Duration("holdTimeout", st.holdTimeout),
			zap.Int("queueDepth", st.queueDepth), zap.Int64("held", rs.t.waiting.Load()))
	}
}

// log returns the activator's logger with the revision's key.
func (rs *revState) log() *zap.Logger {
	return rs.base.With(zap.String("revision", rs.key.String()))
}

// setTrue sets m[k] = true, making m first if it is nil, and returns m.
func setTrue(m map[string]bool, k string) map[string]bool {
	if m == nil {
		m = map[string]bool{}
	}
	m[k] = true
	return m
}
