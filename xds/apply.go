package xds

import (
	"context"
	"fmt"
	"maps"
	"time"

	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"

	"github.com/thaw-dev/thaw/revision"
	"github.com/thaw-dev/thaw/xds/encoded"
	"github.com/thaw-dev/thaw/xds/translate"
)

// change is the difference between the applied resources of one type and
// a new translation.
type change struct {
	typeURL string
	// upd holds new and changed resources, with their versions in ver.
	upd map[string]types.Resource
	ver map[string]string
	// enc holds the encodings of upd for the deltaTypes (their cache
	// sends them as they are).
	enc   map[string][]byte
	added []string
	del   []string
	// encoded is set for a type the translator keeps as encodings
	// (diffEncoded): upd's values are nil.
	encoded bool
}

// diff compares a new translation of one type with what the caches hold.
// proto.Equal keeps unchanged resources (and their versions) as they are,
// so Envoy is sent only what changed.
func (s *Server) diff(typeURL string, want map[string]types.Resource) (*change, error) {
	have := s.applied[typeURL]
	if dc := s.deltas[typeURL]; dc != nil {
		have = dc.held()
	}
	c := newChange(typeURL)
	for name, r := range want {
		old, ok := have[name]
		// The translator reuses unchanged resources: same pointer, no
		// need to compare.
		if ok && (old == r || proto.Equal(old, r)) {
			continue
		}
		if err := c.add(name, r); err != nil {
			return nil, err
		}
		if !ok {
			c.added = append(c.added, name)
		}
	}
	for name := range have {
		if _, ok := want[name]; !ok {
			c.del = append(c.del, name)
		}
	}
	return c, nil
}

// diffEncoded compares a new translation of one type kept as encodings
// (translation.encoded) with what its delta cache holds, by version.
func (s *Server) diffEncoded(typeURL string, want map[string]*encoded.Resource) *change {
	c := newChange(typeURL)
	c.encoded = true // only the delta caches hold these types
	s.deltas[typeURL].view(func(have map[string]*deltaEntry) {
		for name, e := range want {
			h, ok := have[name]
			if ok && h.version == e.Version {
				continue
			}
			c.upd[name], c.ver[name], c.enc[name] = nil, e.Version, e.Bytes
			if !ok {
				c.added = append(c.added, name)
			}
		}
		for name := range have {
			if _, ok := want[name]; !ok {
				c.del = append(c.del, name)
			}
		}
	})
	return c
}

func newChange(typeURL string) *change {
	c := &change{typeURL: typeURL, upd: map[string]types.Resource{}, ver: map[string]string{}}
	if deltaTypes[typeURL] {
		c.enc = map[string][]byte{}
	}
	return c
}

// add records a new or changed resource with its version.
func (c *change) add(name string, r types.Resource) error {
	b, v, err := encoded.Hash(r)
	if err != nil {
		return err
	}
	c.upd[name], c.ver[name] = r, v
	if c.enc != nil {
		c.enc[name] = b
	}
	return nil
}

// deltaTypes are the resource types served by a deltaCache: one resource
// or more per revision. Listeners and routes (a handful) stay in
// go-control-plane LinearCaches.
var deltaTypes = map[string]bool{
	resourcev3.EndpointType:    true,
	resourcev3.ClusterType:     true,
	resourcev3.VirtualHostType: true,
}

// update applies upd and del to the type's cache.
func (s *Server) update(typeURL string, c *change, del []string) error {
	if dc := s.deltas[typeURL]; dc != nil {
		return dc.update(c.upd, c.enc, c.ver, del)
	}
	return s.caches[typeURL].UpdateResources(c.upd, del)
}

// upsert puts c's new and changed resources in the cache.
func (s *Server) upsert(c *change) error {
	if len(c.upd) == 0 {
		return nil
	}
	if err := s.update(c.typeURL, c, nil); err != nil {
		return fmt.Errorf("update %s cache: %w", encoded.ShortType(c.typeURL), err)
	}
	if s.deltas[c.typeURL] == nil {
		maps.Copy(s.applied[c.typeURL], c.upd)
		maps.Copy(s.versions[c.typeURL], c.ver)
	}
	return nil
}

// replace puts c's new and changed resources in the cache and deletes its
// stale ones, in one update (one response per stream).
func (s *Server) replace(c *change) error {
	if len(c.upd) == 0 && len(c.del) == 0 {
		return nil
	}
	if err := s.update(c.typeURL, c, c.del); err != nil {
		return fmt.Errorf("update %s cache: %w", encoded.ShortType(c.typeURL), err)
	}
	if s.deltas[c.typeURL] == nil {
		maps.Copy(s.applied[c.typeURL], c.upd)
		maps.Copy(s.versions[c.typeURL], c.ver)
		for _, n := range c.del {
			delete(s.applied[c.typeURL], n)
			delete(s.versions[c.typeURL], n)
		}
	}
	return nil
}

// remove deletes c's stale resources from the cache.
func (s *Server) remove(c *change) error {
	if len(c.del) == 0 {
		return nil
	}
	if err := s.update(c.typeURL, newChange(c.typeURL), c.del); err != nil {
		return fmt.Errorf("delete from %s cache: %w", encoded.ShortType(c.typeURL), err)
	}
	for _, n := range c.del {
		delete(s.applied[c.typeURL], n)
		delete(s.versions[c.typeURL], n)
	}
	return nil
}

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
		if done, err := s.applyFast(snap, start); done || err != nil {
			return err
		}
	}
	s.prevSnap = snap
	res, err := s.tr.Translate(snap)
	if res == nil {
		return fmt.Errorf("translate snapshot %d: %w", snap.Version, err)
	}
	s.logSkipped(res.Skipped)
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

	if err := s.upsert(st.cds); err != nil {
		return err
	}
	if err := s.upsert(st.eds); err != nil {
		return err
	}
	s.publish(snap, res.Resources, st.eds, first, start)
	if !first && len(st.cds.added) > 0 && s.stageFor(st, stageRoutes, []stageWait{
		{typeURL: resourcev3.ClusterType, want: s.deltas[resourcev3.ClusterType].versionsOf(st.cds.added)},
		{typeURL: resourcev3.EndpointType, want: s.deltas[resourcev3.EndpointType].versionsOf(st.cds.added)},
	}) {
		return ctx.Err()
	}
	return s.applyRoutes(ctx, st)
}

// applyFast applies snap through the endpoint fast path when only
// endpoints changed since the last applied snapshot; done is false when
// snap needs a full apply.
func (s *Server) applyFast(snap *revision.Snapshot, start time.Time) (done bool, err error) {
	s.mu.RLock()
	skipped := s.skipped
	s.mu.RUnlock()
	changed, ok, err := s.tr.EndpointChanges(s.prevSnap, snap, skipped)
	if err != nil || !ok {
		return false, nil // the full translation reports the error
	}
	s.prevSnap = snap
	return true, s.applyEndpoints(changed, start)
}

// applyEndpoints is apply's fast path (see translator.endpointChanges):
// only the changed revisions' ClusterLoadAssignments are compared and
// updated, in one cache update.
func (s *Server) applyEndpoints(changed []*revision.Revision, start time.Time) error {
	eds := newChange(resourcev3.EndpointType)
	dc := s.deltas[resourcev3.EndpointType]
	names := make([]string, len(changed))
	for i, r := range changed {
		names[i] = s.tr.ClusterName(r.Key)
	}
	have := dc.heldOf(names)
	for _, r := range changed {
		cla := s.tr.LoadAssignment(r.Key)
		name := cla.GetClusterName()
		if old := have[name]; old == cla || proto.Equal(old, cla) {
			continue
		}
		if err := eds.add(name, cla); err != nil {
			return err
		}
	}
	if err := s.upsert(eds); err != nil {
		return err
	}
	versions := dc.versionsOf(names)
	s.mu.Lock()
	for i, r := range changed {
		s.revs[r.Key] = appliedRevision{generation: r.Generation, cla: names[i], claVersion: versions[names[i]]}
	}
	s.mu.Unlock()
	s.startFlips(eds, false, start)
	s.metrics.applySeconds.Observe(s.clock.Since(start).Seconds())
	s.notify.broadcast()
	return nil
}

// publish makes the revisions' applied generations visible to
// ConfirmedEverywhere (after their endpoints are in the cache) and starts
// flip-to-ACK timers for changed ClusterLoadAssignments.
func (s *Server) publish(snap *revision.Snapshot, res *translate.Resources, eds *change, first bool, start time.Time) {
	revs := make(map[revision.Key]appliedRevision, snap.Revisions.Len())
	s.deltas[resourcev3.EndpointType].view(func(held map[string]*deltaEntry) {
		for k, rev := range snap.Revisions.All() {
			if _, skipped := res.Skipped[k]; skipped {
				continue
			}
			name := s.tr.ClusterName(k)
			var version string
			if e := held[name]; e != nil {
				version = e.version
			}
			revs[k] = appliedRevision{generation: rev.Generation, cla: name, claVersion: version}
		}
	})
	s.mu.Lock()
	s.revs = revs
	s.skipped = res.Skipped
	s.mu.Unlock()
	s.metrics.skipped.Set(float64(len(res.Skipped)))
	s.startFlips(eds, first, start)
	s.notify.broadcast()
}

// startFlips starts flip-to-ACK timers for changed (not added)
// ClusterLoadAssignments and drops those of deleted ones.
func (s *Server) startFlips(eds *change, first bool, start time.Time) {
	s.flipsMu.Lock()
	added := make(map[string]bool, len(eds.added))
	for _, n := range eds.added {
		added[n] = true
	}
	for name, v := range eds.ver {
		if !first && !added[name] {
			s.flips[name] = flip{version: v, start: start}
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
				v = dc.versions()
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
