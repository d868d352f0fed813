package xds

import (
	"context"
	"fmt"
	"maps"
	"time"

	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"

	"github.com/thaw-dev/thaw/revision"
	"github.com/thaw-dev/thaw/xds/cache"
	"github.com/thaw-dev/thaw/xds/translate"
)

// apply translates snap and applies it in make-before-break order:
//
//  1. new and changed clusters, then endpoints (a mode flip ends here:
//     one ClusterLoadAssignment);
//  2. when clusters were added, stage until every Envoy that follows
//     clusters ACKed them and their endpoints (at most StageTimeout), so no
//     route points at a warming cluster;
//  3. listeners and routes, then virtual hosts (VHDS: new, changed and
//     removed ones at once);
//  4. when something is removed, stage until every Envoy ACKed the new
//     routes and virtual hosts (at most StageTimeout), then delete
//     listeners, clusters and endpoints nothing references any more.
//
// A stage does not wait: apply returns with s.stage set, and Run finishes
// it from the ACK notifications (advanceStage) while it keeps applying
// endpoint-only snapshots (the fast path), so one slow or stopped Envoy
// never delays the flips of other revisions. The first apply (before the
// caches open) has no stages.
func (s *Server) apply(ctx context.Context, snap *revision.Snapshot, first bool) error {
	start := s.clock.Now()
	if !first {
		if done, err := s.applyFast(ctx, snap, start); done || err != nil {
			return err
		}
	}
	s.prevSnap = snap
	res, err := s.tr.Translate(snap)
	if res == nil {
		return fmt.Errorf("translate snapshot %d: %w", snap.Version, err)
	}
	s.logSkipped(res.Skipped)
	s.logSkippedSplits(res.SkippedSplits)
	byType := res.ByType()
	changes := map[string]*change{}
	for _, typ := range resourceTypes {
		if enc, ok := res.Encoded[typ]; ok {
			changes[typ] = s.diffEncoded(typ, enc)
			continue
		}
		c, err := s.diff(typ, byType[typ])
		if err != nil {
			return err
		}
		changes[typ] = c
	}
	st := &staged{snap: snap, first: first, start: start,
		cds: changes[resourcev3.ClusterType], eds: changes[resourcev3.EndpointType],
		lds: changes[resourcev3.ListenerType], rds: changes[resourcev3.RouteType], vhds: changes[resourcev3.VirtualHostType]}

	splits, err := s.splitFull(snap, st.eds, first) // removal_first_full.go
	if err != nil {
		return err
	}
	if err := s.upsert(st.cds); err != nil {
		return err
	}
	s.startFlips(st.eds, first, start) // before the update goes out
	if err := s.upsert(st.eds); err != nil {
		return err
	}
	s.recordApplied(snap, res.Resources, first, keepGenerations(splits))
	s.noteFullSplits(st, splits)
	if !first && len(st.cds.added) > 0 && s.stageFor(st, stageRoutes, []stageWait{
		{typeURL: resourcev3.ClusterType, want: s.deltas[resourcev3.ClusterType].VersionsOf(st.cds.added)},
		{typeURL: resourcev3.EndpointType, want: s.deltas[resourcev3.EndpointType].VersionsOf(st.cds.added), current: true, parent: resourcev3.ClusterType},
	}) {
		return ctx.Err()
	}
	return s.applyRoutes(ctx, st)
}

// applyFast applies snap through the endpoint fast path when only
// endpoints changed since the last applied snapshot; done is false when
// snap needs a full apply.
func (s *Server) applyFast(ctx context.Context, snap *revision.Snapshot, start time.Time) (done bool, err error) {
	s.mu.RLock()
	skipped := s.skipped
	s.mu.RUnlock()
	changed, ok, err := s.tr.EndpointChanges(s.prevSnap, snap, skipped)
	if err != nil || !ok {
		return false, nil // the full translation reports the error
	}
	s.prevSnap = snap
	return true, s.applyChanged(ctx, snap, changed, start)
}

// applyEndpoints is apply's fast path (see memo.Translator.EndpointChanges):
// only the changed revisions' ClusterLoadAssignments are compared and
// updated, in one cache update.
//
// snapVersion is the registry snapshot Version changed comes from (a
// removal split off waits for modules holding it, removal_first.go).
func (s *Server) applyEndpoints(changed []*revision.Revision, snapVersion uint64, start time.Time) error {
	eds := newChange(resourcev3.EndpointType)
	dc := s.deltas[resourcev3.EndpointType]
	names := make([]string, len(changed))
	for i, r := range changed {
		names[i] = s.tr.ClusterName(r.Key)
	}
	have := dc.HeldOf(names)
	split := map[revision.Key]bool{}
	for _, r := range changed {
		cla := s.tr.LoadAssignment(r.Key)
		if cla == nil {
			continue // idle before and after: nothing of it changes in Envoy
		}
		name := cla.GetClusterName()
		if s.removalFirst() { // removal_first.go
			held, _ := have[name].(*endpointv3.ClusterLoadAssignment)
			_, pending := s.splits[r.Key]
			cla, split[r.Key] = removalOnly(held, cla, pending)
		}
		if old := have[name]; old == cla || proto.Equal(old, cla) {
			continue
		}
		if err := eds.add(name, cla); err != nil {
			return err
		}
	}
	// The flips are recorded before the update goes out: an Envoy may
	// ACK it before this goroutine runs again (startFlips).
	s.startFlips(eds, false, start)
	if err := s.upsert(eds); err != nil {
		return err
	}
	versions := dc.VersionsOf(names)
	s.mu.Lock()
	for i, r := range changed {
		ar := s.appliedOf(r, names[i], versions[names[i]])
		if split[r.Key] {
			// Not confirmed at r's generation until the additions are
			// sent: modsvc keeps them from the modules meanwhile.
			ar.generation = s.revs[r.Key].generation
			s.noteSplit(r, names[i], versions[names[i]], snapVersion, start)
		}
		s.revs[r.Key] = ar
	}
	s.mu.Unlock()
	s.metrics.applySeconds.Observe(s.clock.Since(start).Seconds())
	s.notify.broadcast()
	return nil
}

// recordApplied makes the revisions' applied generations visible to
// ConfirmedEverywhere (after their endpoints are in the cache). A
// revision in keep stays at the generation given there (its assignment
// went out removal first: modsvc keeps the additions from the modules
// meanwhile).
func (s *Server) recordApplied(snap *revision.Snapshot, res *translate.Resources, first bool, keep map[revision.Key]uint64) {
	revs := make(map[revision.Key]appliedRevision, snap.Revisions.Len())
	s.deltas[resourcev3.EndpointType].View(func(held map[string]*cache.Entry) {
		for k, rev := range snap.Revisions.All() {
			if _, skipped := res.Skipped[k]; skipped {
				continue
			}
			name := s.tr.ClusterName(k)
			var version string
			if e := held[name]; e != nil {
				version = e.Version()
			}
			ar := s.appliedOf(rev, name, version)
			if g, ok := keep[k]; ok {
				ar.generation = g
			}
			revs[k] = ar
		}
	})
	s.mu.Lock()
	s.revs = revs
	s.skipped = res.Skipped
	s.mu.Unlock()
	s.metrics.skipped.Set(float64(len(res.Skipped)))
	s.notify.broadcast()
}

// startFlips starts flip-to-ACK timers for changed (not added)
// ClusterLoadAssignments, or virtual hosts (a revision going idle or
// waking changes its virtual host: translate/hold.go), and drops those
// of deleted ones. Call it before the change goes to the cache: an Envoy
// may ACK the update before the applying goroutine runs again, and a
// timer started after its ACK would wait for the resource's next ACK
// (seconds later, or never), a false tail in flip-to-ACK.
func (s *Server) startFlips(eds *change, first bool, start time.Time) {
	s.flipsMu.Lock()
	added := make(map[string]bool, len(eds.added))
	for _, n := range eds.added {
		added[n] = true
	}
	for name, v := range eds.ver {
		if !first && !added[name] {
			s.flips[name] = flip{typeURL: eds.typeURL, version: v, start: start}
		}
	}
	for _, name := range eds.del {
		delete(s.flips, name)
	}
	s.flipsMu.Unlock()
}

// logSkipped logs revisions newly left out of the translation.
func (s *Server) logSkipped(skipped map[revision.Key]error) {
	s.mu.RLock()
	prev := s.skipped
	s.mu.RUnlock()
	for k, err := range skipped {
		if old, ok := prev[k]; ok && old.Error() == err.Error() {
			continue
		}
		s.log.Error("revision left out of Envoy configuration", zap.String("revision", k.String()), zap.Error(err))
	}
}

// trackFirst records the first applied snapshot for WaitFirstAck, and
// forgets resources deleted before any Envoy ACKed them.
func (s *Server) trackFirst(first bool, changes []*change) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if first {
		s.first = map[string]map[string]string{}
		for _, typ := range resourceTypes {
			v := s.versions[typ]
			if dc := s.deltas[typ]; dc != nil {
				if typ == resourcev3.VirtualHostType && s.demand != nil {
					// Only resident hosts: the others stay unencoded
					// (lazy_hosts.go) until an Envoy asks.
					v = dc.VersionsWhere(s.demandResident)
				} else {
					v = dc.Versions()
				}
			} else {
				v = maps.Clone(v)
			}
			if len(v) > 0 {
				s.first[typ] = v
			}
		}
		return
	}
	select {
	case <-s.firstAck:
		s.first = nil
		return
	default:
	}
	for _, c := range changes {
		for _, n := range c.del {
			delete(s.first[c.typeURL], n)
		}
	}
}
