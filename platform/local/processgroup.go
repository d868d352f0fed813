package local

import (
	"slices"
	"sync/atomic"

	"go.uber.org/zap"

	"github.com/thaw-dev/thaw/revision"
)

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

func newRevState(rc *RevisionConfig, base *zap.Logger) *processGroup {
	rs := &processGroup{fingerprint: configFingerprint(*rc), base: base}
	rs.cfg.Store(rc)
	return rs
}

// log returns the platform's logger with the revision's key.
func (rs *processGroup) log() *zap.Logger {
	return rs.base.With(zap.String("revision", rs.cfg.Load().Key.String()))
}

// Scale returns the desired process count and the ready processes, as
// GetScale does (autoscaler.ScaleReader).
func (rs *processGroup) Scale() (current, ready int32, err error) {
	v := rs.scale.Load()
	return int32(uint32(v >> 32)), int32(uint32(v)), nil
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
