package revision

import (
	"hash/maphash"
	"iter"
	"maps"
)

// revShards is the number of shards of a RevisionMap: a publication copies
// the shards it changes, so at 100,000 revisions one change copies ~400
// entries instead of 100,000.
const revShards = 256

var keySeed = maphash.MakeSeed()

func shardOf(k Key) int { return int(maphash.Comparable(keySeed, k) % revShards) }

// RevisionMap is an immutable map from Key to *Revision. Snapshots share
// the parts of it that did not change, so publishing a change costs in
// proportion to the change, not to the number of revisions. The zero value
// is an empty map.
type RevisionMap struct {
	shards *[revShards]map[Key]*Revision
	n      int
}

// NewRevisionMap returns a map holding revs, keyed by their Key (a later
// duplicate wins). Tests and tools build Snapshots with it; the Registry
// builds its own incrementally.
func NewRevisionMap(revs ...*Revision) RevisionMap {
	changes := make(map[Key]*Revision, len(revs))
	for _, r := range revs {
		changes[r.Key] = r
	}
	return RevisionMap{}.with(changes)
}

// Len returns the number of revisions.
func (m RevisionMap) Len() int { return m.n }

// Get returns the revision for k, or nil.
func (m RevisionMap) Get(k Key) *Revision {
	if m.shards == nil {
		return nil
	}
	return m.shards[shardOf(k)][k]
}

// All yields every revision once, in no particular order.
func (m RevisionMap) All() iter.Seq2[Key, *Revision] {
	return func(yield func(Key, *Revision) bool) {
		if m.shards == nil {
			return
		}
		for _, sh := range m.shards {
			for k, r := range sh {
				if !yield(k, r) {
					return
				}
			}
		}
	}
}

// Keys yields every key once, in no particular order.
func (m RevisionMap) Keys() iter.Seq[Key] {
	return func(yield func(Key) bool) {
		for k := range m.All() {
			if !yield(k) {
				return
			}
		}
	}
}

// with returns m with changes applied: a nil value removes its key. m is
// not modified; shards without a change are shared.
func (m RevisionMap) with(changes map[Key]*Revision) RevisionMap {
	if len(changes) == 0 {
		return m
	}
	next := new([revShards]map[Key]*Revision)
	if m.shards != nil {
		*next = *m.shards
	}
	var copied [revShards]bool
	n := m.n
	for k, r := range changes {
		i := shardOf(k)
		sh := next[i]
		old, had := sh[k]
		if had && old == r {
			continue
		}
		if r == nil && !had {
			continue
		}
		if !copied[i] {
			sh = maps.Clone(sh)
			if sh == nil {
				sh = map[Key]*Revision{}
			}
			next[i], copied[i] = sh, true
		}
		switch {
		case r == nil:
			delete(sh, k)
			n--
		default:
			sh[k] = r
			if !had {
				n++
			}
		}
	}
	return RevisionMap{shards: next, n: n}
}
