package xds

import (
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"

	"github.com/thaw-dev/thaw/revision"
)

// Removal first in a full apply (removal_first.go). A full apply sends
// the ClusterLoadAssignments of every revision that changed, and one that
// swaps a backend (a process restarted on a new port, a pod replaced in
// the same registry change as a new revision) carries the same risk as on
// the endpoint path: Envoy's host count equal to the module's, the hosts
// different. So its changed (not added) assignments are split the same
// way before they go out, and Run sends the additions later
// (advanceSplits).

// fullSplit is one assignment a full apply sends removal-only.
type fullSplit struct {
	rev  *revision.Revision
	name string
	// generation is the revision's Generation applied before: the one it
	// stays confirmed at until its additions are sent.
	generation uint64
}

// splitFull replaces, in eds (a full apply's endpoint change, not yet in
// the cache), each changed assignment that removes and adds hosts (or
// adds any while an earlier removal is pending) by its removal alone, and
// returns those. Nothing without removal first or on the first apply.
func (s *Server) splitFull(snap *revision.Snapshot, eds *change, first bool) ([]fullSplit, error) {
	if first || !s.removalFirst() || eds.encoded || len(eds.upd) == 0 {
		return nil, nil
	}
	added := make(map[string]bool, len(eds.added))
	for _, n := range eds.added {
		added[n] = true
	}
	changed := map[string]bool{}
	for name := range eds.upd {
		if !added[name] {
			changed[name] = true
		}
	}
	if len(changed) == 0 {
		return nil, nil
	}
	names := make([]string, 0, len(changed))
	for n := range changed {
		names = append(names, n)
	}
	have := s.deltas[resourcev3.EndpointType].HeldOf(names)
	var out []fullSplit
	for k, r := range snap.Revisions.All() {
		name := s.tr.ClusterName(k)
		if !changed[name] {
			continue
		}
		held, _ := have[name].(*endpointv3.ClusterLoadAssignment)
		next, _ := eds.upd[name].(*endpointv3.ClusterLoadAssignment)
		_, pending := s.splits[k]
		cla, split := removalOnly(held, next, pending)
		if !split {
			continue
		}
		if err := eds.add(name, cla); err != nil {
			return nil, err
		}
		s.mu.RLock()
		gen := s.revs[k].generation
		s.mu.RUnlock()
		out = append(out, fullSplit{rev: r, name: name, generation: gen})
	}
	return out, nil
}

// keepGenerations returns the generations splits keep (see
// recordApplied), nil without splits.
func keepGenerations(splits []fullSplit) map[revision.Key]uint64 {
	if len(splits) == 0 {
		return nil
	}
	keep := make(map[revision.Key]uint64, len(splits))
	for _, sp := range splits {
		keep[sp.rev.Key] = sp.generation
	}
	return keep
}

// noteFullSplits records splits once their removals are in the cache.
func (s *Server) noteFullSplits(st *staged, splits []fullSplit) {
	for _, sp := range splits {
		v := s.deltas[resourcev3.EndpointType].VersionsOf([]string{sp.name})[sp.name]
		s.noteSplit(sp.rev, sp.name, v, st.snap.Version, st.start)
	}
}
