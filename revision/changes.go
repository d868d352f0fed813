package revision

import "iter"

// changeLogLen is how many publications a Snapshot remembers the changed
// keys of. A reader that falls further behind walks every key once.
const changeLogLen = 64

// changeSet is the keys one publication changed (each once).
type changeSet struct {
	version uint64
	keys    []Key
}

// Changes yields, each once and in no particular order, the keys whose
// entry in Revisions or Invalid may differ between old and s: revisions
// added, removed, changed, or moved in or out of Invalid. A reader that
// keeps the snapshot it last handled and calls Changes on the next one
// works in proportion to what changed, not to the number of revisions.
//
// The answer comes from the registry's log when old is one of the
// changeLogLen snapshots the same registry published before s. Otherwise
// (old nil, newer than s, from another registry, built by hand, or too
// old) Changes yields every key of either snapshot, which is always
// correct. A key may be yielded whose revision did not change after all
// (changed and changed back within the interval).
func (s *Snapshot) Changes(old *Snapshot) iter.Seq[Key] {
	if sets, ok := s.changeSets(old); ok {
		return func(yield func(Key) bool) {
			if len(sets) == 1 {
				for _, k := range sets[0].keys {
					if !yield(k) {
						return
					}
				}
				return
			}
			yieldUnion(sets, make(map[Key]struct{}, unionBound(sets, s, old)), yield)
		}
	}
	return func(yield func(Key) bool) {
		for k := range s.Revisions.All() {
			if !yield(k) {
				return
			}
		}
		for k := range s.Invalid {
			if !yield(k) {
				return
			}
		}
		if old == nil {
			return
		}
		for k := range old.Revisions.All() {
			if _, bad := s.Invalid[k]; s.Revisions.Get(k) == nil && !bad && !yield(k) {
				return
			}
		}
		for k := range old.Invalid {
			if _, bad := s.Invalid[k]; s.Revisions.Get(k) == nil && !bad && old.Revisions.Get(k) == nil && !yield(k) {
				return
			}
		}
	}
}

// yieldUnion yields each key of sets once, in log order, recording the
// keys yielded in seen (empty on entry; its size hint is the caller's).
// It stops when yield returns false.
func yieldUnion(sets []changeSet, seen map[Key]struct{}, yield func(Key) bool) {
	for _, cs := range sets {
		for _, k := range cs.keys {
			if _, dup := seen[k]; dup {
				continue
			}
			seen[k] = struct{}{}
			if !yield(k) {
				return
			}
		}
	}
}

// changeSets returns the log entries between old (excluded) and s
// (included); ok is false when the log does not cover that interval.
func (s *Snapshot) changeSets(old *Snapshot) ([]changeSet, bool) {
	if old == nil || s.origin == nil || old.origin != s.origin || old.Version > s.Version {
		return nil, false
	}
	if old.Version == s.Version {
		return nil, true
	}
	want := s.Version - old.Version // publications since old
	if uint64(len(s.log)) < want {
		return nil, false
	}
	return s.log[len(s.log)-int(want):], true
}

// unionBound is the size to allocate for the union of sets' keys: their
// total, but no more than the keys of s and old together (every changed
// key is in one of them, or in neither when added and removed between
// them), so a log that changed the same keys many times does not size the
// map by its length. Sizing it once spares the map's growth (rehashing
// every key so far) while a reader catches up on many publications, as
// every reader does when thaw starts with 100,000 revisions.
func unionBound(sets []changeSet, s, old *Snapshot) int {
	total := 0
	for _, cs := range sets {
		total += len(cs.keys)
	}
	return min(total, s.Revisions.Len()+len(s.Invalid)+old.Revisions.Len()+len(old.Invalid))
}
