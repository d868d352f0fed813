package modsvc

import (
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/thaw-dev/thaw/module/state"
	"github.com/thaw-dev/thaw/revision"
)

// A later message costs what changed, not the number of revisions.
//
// rebuild translates every revision of a snapshot: at 10,000 revisions
// that is ~20 ms of thaw's CPU, at 100,000 ~0.5 s, for each registry
// change, and a wake waits for its backend's message behind it
// (BenchmarkStateChange, docs/scaling.md). patch translates only the
// revisions that may differ from the last message: those the registry
// changed since the snapshot the stream last handled
// (revision.Snapshot.Changes), and those whose backends the last message
// withheld until this node's ACK (a Confirmer's answer changes without a
// registry change). Everything else a revision's state depends on is in
// its published Revision, except the fleet's size and this Envoy's index
// (slots): a change of those rebuilds.

// patchable reports whether the next message can be patched from the
// last one: there was one, built for the same fleet size and index.
func (st *stream) patchable(envoys, index int) bool {
	return st.snap != nil && st.prev != nil && st.envoys == envoys && st.index == index
}

// patch returns the incremental update from the last message to snap
// (nil when nothing differs) and makes snap the stream's baseline,
// translating only the revisions that may have changed.
func (st *stream) patch(snap *revision.Snapshot) *state.Update {
	if st.sent == nil {
		st.sent = map[string]map[string]bool{}
	}
	d := &state.Update{}
	seen := map[revision.Key]bool{}
	visit := func(key revision.Key) {
		if seen[key] {
			return
		}
		seen[key] = true
		ks := key.String()
		r := snap.Get(key)
		if r == nil { // deleted, or now invalid
			delete(st.withheld, key)
			delete(st.sent, ks)
			if _, ok := st.prev[ks]; ok {
				delete(st.prev, ks)
				d.Removed = append(d.Removed, ks)
			}
			return
		}
		st.built++
		ru, held := revisionUpdate(r, st.envoys, st.index, st.allow(r), st.early)
		if held > 0 {
			if st.withheld == nil {
				st.withheld = map[revision.Key]int{}
			}
			st.withheld[key] = held
		} else {
			delete(st.withheld, key)
		}
		if old, ok := st.prev[ks]; ok && reflect.DeepEqual(old, &ru) {
			return
		}
		st.prev[ks] = &ru
		st.sent[ks] = addrSet(ru.Backends)
		d.Revisions = append(d.Revisions, ru)
	}
	for key := range snap.Changes(st.snap) {
		visit(key)
	}
	// visit edits st.withheld: walk a copy of its keys.
	for _, key := range slices.Collect(maps.Keys(st.withheld)) {
		visit(key)
	}
	st.snap = snap
	if len(d.Revisions) == 0 && len(d.Removed) == 0 {
		return nil
	}
	// Sorted like a full update's, so a message is reproducible.
	slices.SortFunc(d.Revisions, func(a, b state.RevisionUpdate) int { return strings.Compare(a.Key, b.Key) })
	slices.Sort(d.Removed)
	return d
}

// addrSet returns the addresses of bs this node confirmed (a stream's
// sent set: an unconfirmed one is not "confirmed before").
func addrSet(bs []state.BackendUpdate) map[string]bool {
	m := make(map[string]bool, len(bs))
	for _, b := range bs {
		if !b.Unconfirmed {
			m[b.Addr] = true
		}
	}
	return m
}
