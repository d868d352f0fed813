package xds

import (
	"context"
	"time"

	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"

	"github.com/thaw-dev/thaw/revision"
	"github.com/thaw-dev/thaw/xds/encoded"
)

// Idle revisions (issue 28, translate/hold.go): a revision without any
// backend has no cluster and no ClusterLoadAssignment; its virtual host
// leads to a shared hold cluster. Waking (its first backend) and going
// idle (its last backend gone) take the fast path when its virtual host
// is its own (memo.Translator.EndpointChanges): applyTransitions stages
// them make-before-break like a full apply, without translating every
// revision.

// appliedOf returns what the caches hold for r: its ClusterLoadAssignment
// name at claVersion, or for an idle revision the resource that confirms
// its routing (memo.ConfirmRef).
func (s *Server) appliedOf(r *revision.Revision, name, claVersion string) appliedRevision {
	if ref, idle := s.tr.Confirm(r.Key); idle {
		return appliedRevision{generation: r.Generation, typeURL: ref.TypeURL, cla: ref.Name, claVersion: ref.Version}
	}
	return appliedRevision{generation: r.Generation, typeURL: resourcev3.EndpointType, cla: name, claVersion: claVersion}
}

// applyChanged applies the fast path's changed revisions: their
// ClusterLoadAssignments only (applyEndpoints), and revisions waking or
// going idle (applyTransitions), told apart by whether the cache holds
// their cluster.
func (s *Server) applyChanged(ctx context.Context, snap *revision.Snapshot, changed []*revision.Revision, start time.Time) error {
	names := make([]string, len(changed))
	for i, r := range changed {
		names[i] = s.tr.ClusterName(r.Key)
	}
	held := s.deltas[resourcev3.ClusterType].VersionsOf(names)
	plain := changed[:0:0]
	var trans []*revision.Revision
	for i, r := range changed {
		_, has := held[names[i]]
		_, idle := s.tr.Confirm(r.Key)
		if idle == has {
			trans = append(trans, r)
		} else {
			plain = append(plain, r)
		}
	}
	if len(plain) > 0 || len(trans) == 0 {
		if err := s.applyEndpoints(plain, snap.Version, start); err != nil {
			return err
		}
	}
	if len(trans) == 0 {
		return nil
	}
	return s.applyTransitions(ctx, snap, trans, start)
}

// applyTransitions applies revisions that woke (their cluster and
// endpoints are added, then, once every Envoy ACKed them, their virtual
// host leads to them) or went idle (their virtual host leads to the hold
// cluster, then, once every Envoy ACKed it, their cluster and endpoints
// are removed), through the stages of a full apply (apply, applyRoutes).
func (s *Server) applyTransitions(ctx context.Context, snap *revision.Snapshot, trans []*revision.Revision, start time.Time) error {
	st := &staged{snap: snap, start: start, fast: true,
		cds: newChange(resourcev3.ClusterType), eds: newChange(resourcev3.EndpointType),
		lds: newChange(resourcev3.ListenerType), rds: newChange(resourcev3.RouteType),
		vhds: newChange(resourcev3.VirtualHostType)}
	names := make([]string, len(trans))
	var ahead map[string]bool
	for i, r := range trans {
		tr, ok, err := s.tr.Transition(r.Key)
		if err != nil || !ok {
			return err
		}
		names[i] = tr.ClusterName
		if !tr.Idle && len(r.Backends) == 0 { // translate.ClusterAhead
			if ahead == nil {
				ahead = map[string]bool{}
			}
			ahead[tr.ClusterName] = true
		}
		if !tr.KeepsRoutes { // with the module's cluster routes nothing routes differently
			if err := addOne(st.vhds, tr.VirtualHostName, tr.VirtualHost, tr.VirtualHostEnc); err != nil {
				return err
			}
		}
		if tr.Idle {
			st.cds.del = append(st.cds.del, tr.ClusterName)
			st.eds.del = append(st.eds.del, tr.ClusterName)
			st.sleeping = append(st.sleeping, tr.ClusterName)
			continue
		}
		if err := addOne(st.cds, tr.ClusterName, tr.Cluster, tr.ClusterEnc); err != nil {
			return err
		}
		if err := st.eds.add(tr.ClusterName, tr.Endpoints); err != nil {
			return err
		}
		st.cds.added = append(st.cds.added, tr.ClusterName)
		st.eds.added = append(st.eds.added, tr.ClusterName)
	}
	if len(st.vhds.upd) == 0 {
		// Cluster routes (translate.ClusterRoutes): no virtual host waits
		// for the new clusters. Timed before the update goes out (an
		// Envoy may ACK it before this goroutine runs again).
		s.startWakeFlips(st.eds.added, ahead, st.eds.ver, start)
	}
	if err := s.upsert(st.cds); err != nil {
		return err
	}
	if err := s.upsert(st.eds); err != nil {
		return err
	}
	versions := s.deltas[resourcev3.EndpointType].VersionsOf(st.eds.added)
	s.mu.Lock()
	for i, r := range trans {
		s.revs[r.Key] = s.appliedOf(r, names[i], versions[names[i]])
	}
	s.mu.Unlock()
	s.notify.broadcast()
	if len(st.vhds.upd) == 0 {
		// The removed clusters are no route's either.
		return s.finishApply(ctx, st)
	}
	if len(st.cds.added) > 0 && s.stageFor(st, stageRoutes, []stageWait{
		{typeURL: resourcev3.ClusterType, want: s.deltas[resourcev3.ClusterType].VersionsOf(st.cds.added)},
		{typeURL: resourcev3.EndpointType, want: versions, current: true, parent: resourcev3.ClusterType},
	}) {
		return ctx.Err()
	}
	return s.applyRoutes(ctx, st)
}

// addOne records one resource in c: its message, or its encoding when
// the translator keeps it encoded.
func addOne(c *change, name string, msg types.Resource, enc *encoded.Resource) error {
	if enc != nil {
		b, v, err := enc.Get() // a transition's host is sent: encode a lazy one
		if err != nil {
			return err
		}
		c.upd[name], c.ver[name], c.enc[name] = nil, v, b
		c.encoded = true
		return nil
	}
	return c.add(name, msg)
}
