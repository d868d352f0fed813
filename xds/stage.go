package xds

import (
	"context"
	"maps"
	"slices"
	"time"

	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"go.uber.org/zap"

	"github.com/thaw-dev/thaw/revision"
	"github.com/thaw-dev/thaw/xds/encoded"
)

// stageNext names what a staged apply does once its stage is over.
type stageNext int

const (
	// stageRoutes: clusters were added; next are listeners, routes and
	// virtual hosts (applyRoutes).
	stageRoutes stageNext = iota
	// stageRemovals: something is removed; next are the removals
	// (finishApply).
	stageRemovals
)

// applyRoutes is apply's steps 3 and 4: listeners, routes and virtual
// hosts, then (after a stage when something is removed) the removals.
func (s *Server) applyRoutes(ctx context.Context, st *staged) error {
	if err := s.upsert(st.lds); err != nil {
		return err
	}
	if err := s.upsert(st.rds); err != nil {
		return err
	}
	// Virtual hosts change in one cache update, removals included: a host
	// moving from one virtual host to another (a revision joining a
	// split) must never be in two at once, or Envoy rejects the update.
	s.startFlips(st.vhds, st.first, st.start) // before the update goes out
	if err := s.replace(st.vhds); err != nil {
		return err
	}
	if !st.first {
		s.lazyVersions(st.vhds)
	}
	removing := len(st.cds.del)+len(st.eds.del)+len(st.lds.del)+len(st.rds.del) > 0
	if !st.first && removing {
		var waits []stageWait
		if len(st.rds.upd) > 0 {
			waits = append(waits, stageWait{typeURL: resourcev3.RouteType, want: maps.Clone(st.rds.ver)})
		}
		if len(st.vhds.upd) > 0 || len(st.vhds.del) > 0 {
			waits = append(waits, stageWait{typeURL: resourcev3.VirtualHostType, want: maps.Clone(st.vhds.ver), gone: st.vhds.del})
		}
		if s.stageFor(st, stageRemovals, waits) {
			return ctx.Err()
		}
	}
	return s.finishApply(ctx, st)
}

// finishApply deletes what nothing references any more and ends the apply.
func (s *Server) finishApply(ctx context.Context, st *staged) error {
	s.observeDemand(st.snap) // before trackFirst: the first snapshot's resident hosts
	s.startSleepFlips(s.sleepRemovals(st), st.start)
	for _, c := range []*change{st.lds, st.rds, st.cds, st.eds} {
		if err := s.remove(c); err != nil {
			return err
		}
	}
	s.trackFirst(st.first, []*change{st.lds, st.rds, st.vhds, st.cds, st.eds})
	if st.first {
		// A stream that resumed (reported the versions it holds) before
		// this snapshot was applied sends nothing more: check it now.
		for _, k := range s.tracker.Keys() {
			s.checkFirstAck(k)
		}
	}
	s.metrics.applySeconds.Observe(s.clock.Since(st.start).Seconds())
	s.notify.broadcast()
	s.log.Debug("applied snapshot", zap.Uint64("snapshot", st.snap.Version), zap.Bool("fast", st.fast),
		zap.Duration("took", s.clock.Since(st.start)),
		zap.Int("clusters", len(st.cds.upd)), zap.Int("endpoints", len(st.eds.upd)),
		zap.Int("routes", len(st.rds.upd)), zap.Int("virtualHosts", len(st.vhds.upd)), zap.Int("listeners", len(st.lds.upd)),
		zap.Int("removed", len(st.cds.del)+len(st.eds.del)+len(st.lds.del)+len(st.rds.del)+len(st.vhds.del)))
	return ctx.Err()
}

// stageWait is one condition of a stage: every stream following typeURL
// ACKed want and the removal of gone.
type stageWait struct {
	typeURL string
	want    map[string]string
	gone    []string
	// current, for a delta type, waits for the versions the cache holds
	// when checked rather than those of want (same names): an added
	// ClusterLoadAssignment may change again while its stage waits (a
	// mode flip through applyWhileStaged), and Envoy then never ACKs the
	// version the stage started with.
	current bool
	// parent, when set, is the type of each wanted resource's parent of
	// the same name (ClusterType for an added cluster's assignment): a
	// stream holding the parent is waited for even before it subscribed
	// to typeURL (ack.Tracker.AllAckedWithParent).
	parent string
}

// staged is a full apply between its steps (see apply): the changes it
// computed, and the stage it waits on. Only Run's goroutine touches it.
type staged struct {
	snap  *revision.Snapshot
	first bool
	// fast: the endpoint fast path's transitions (applyTransitions), not
	// a full translation (apply).
	fast  bool
	start time.Time
	// sleeping are the clusters of the fast path's revisions that went
	// idle (applyTransitions knows them: sleepRemovals need not walk
	// every revision to find them).
	sleeping []string

	cds, eds, lds, rds, vhds *change

	next     stageNext
	waits    []stageWait
	deadline time.Time
}

// stageFor makes st wait for waits before its next step, and reports
// whether it does (false: nothing to wait for, or StageTimeout is 0).
func (s *Server) stageFor(st *staged, next stageNext, waits []stageWait) bool {
	n := 0
	for _, w := range waits {
		if len(w.want) > 0 || len(w.gone) > 0 {
			waits[n] = w
			n++
		}
	}
	if n == 0 || s.cfg.StageTimeout == 0 {
		return false
	}
	st.next, st.waits, st.deadline = next, waits[:n], s.clock.Now().Add(s.cfg.StageTimeout)
	s.stage = st
	return true
}

// stageReady reports whether the pending stage is over: every wait is met,
// or StageTimeout passed (logged: a slow Envoy must not stall the others,
// and it is excluded from confirmation by the ACK timeout, not here).
func (s *Server) stageReady() bool {
	st := s.stage
	met := true
	for _, w := range st.waits {
		want := w.want
		if w.current {
			want = s.deltas[w.typeURL].VersionsOf(slices.Collect(maps.Keys(w.want)))
		}
		acked := s.tracker.AllAcked(w.typeURL, want)
		if s.demand != nil && w.typeURL == resourcev3.VirtualHostType {
			// On demand, a stream is waited for only for the hosts it holds.
			acked = s.tracker.AckedByHolders(w.typeURL, want)
		}
		if w.parent != "" {
			acked = s.tracker.AllAckedWithParent(w.typeURL, want, w.parent)
		}
		if !acked || !s.tracker.AllRemoved(w.typeURL, w.gone) {
			met = false
			break
		}
	}
	if met {
		return true
	}
	if s.clock.Now().Before(st.deadline) {
		return false
	}
	s.metrics.stageTimeouts.Inc()
	for _, w := range st.waits {
		s.log.Warn("make-before-break wait timed out; continuing",
			zap.String("type", encoded.ShortType(w.typeURL)), zap.Int("resources", len(w.want)),
			zap.Duration("timeout", s.cfg.StageTimeout))
	}
	return true
}

// advanceStage runs the pending stage's next steps while its stages are
// over. It returns with s.stage nil, or set to a stage still waiting.
func (s *Server) advanceStage(ctx context.Context) error {
	for s.stage != nil && s.stageReady() {
		st := s.stage
		s.stage = nil
		var err error
		switch st.next {
		case stageRoutes:
			err = s.applyRoutes(ctx, st)
		default:
			err = s.finishApply(ctx, st)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// stageWake returns what wakes Run for the pending stage: acks, the ACK
// notifications Run took before it checked the stage, and a timer at its
// deadline (stop it after use); nil channels without a stage.
func (s *Server) stageWake(acks <-chan struct{}) (<-chan struct{}, <-chan time.Time, func()) {
	if s.stage == nil {
		return nil, nil, func() {}
	}
	t := s.clock.NewTimer(s.stage.deadline.Sub(s.clock.Now()))
	return acks, t.C(), func() { t.Stop() }
}

// applyWhileStaged applies snap's endpoint-only changes while a full apply
// is staged: the ClusterLoadAssignments of revisions whose routing did not
// change go out at once, even when snap also adds, removes or reroutes
// revisions. complete is false when snap holds such other changes: they
// wait for the stage to end, and s.prevSnap stays where the full apply
// left it so that the next full apply still sees them.
func (s *Server) applyWhileStaged(snap *revision.Snapshot) (complete bool, err error) {
	start := s.clock.Now()
	s.mu.RLock()
	skipped := s.skipped
	s.mu.RUnlock()
	changed, complete := s.tr.EndpointsWhileStaged(s.prevSnap, snap, skipped)
	if complete {
		s.prevSnap = snap
	}
	if len(changed) == 0 {
		return complete, nil
	}
	return complete, s.applyEndpoints(changed, snap.Version, start)
}
