package revision

import "slices"

// SetSplit creates or replaces the split s.Key (hosts in any form: they are
// normalised). The registry checks it on every publication against its
// own rules, the splits created before it and the revisions it names, and
// publishes it in Snapshot.Splits with Split.Err set.
func (r *Registry) SetSplit(s Split) {
	c := Split{Key: s.Key, Traffic: slices.Clone(s.Traffic), Created: s.Created}
	for _, h := range s.Hosts {
		c.Hosts = append(c.Hosts, NormalizeHost(h))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	e := r.splits[s.Key]
	if e != nil && slices.Equal(e.split.Hosts, c.Hosts) && slices.Equal(e.split.Traffic, c.Traffic) && e.split.Created.Equal(c.Created) {
		return
	}
	if r.splits == nil {
		r.splits = map[Key]*splitEntry{}
	}
	if e == nil {
		e = &splitEntry{}
		r.splits[s.Key] = e
	}
	e.split = c
	r.splitsChangedLocked()
}

// DeleteSplit removes the split key (nothing when unknown).
func (r *Registry) DeleteSplit(key Key) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.splits[key]; !ok {
		return
	}
	delete(r.splits, key)
	r.splitsChangedLocked()
}

// splitsChangedLocked rebuilds the member index and queues a publication.
func (r *Registry) splitsChangedLocked() {
	r.splitMembers = map[Key]struct{}{}
	for _, e := range r.splits {
		for _, t := range e.split.Traffic {
			r.splitMembers[t.Revision] = struct{}{}
		}
	}
	r.splitsDirty = true
	r.changedLocked()
}

// publishSplitsLocked returns the splits and their version for the
// snapshot being published over prev: resolved again only when a split
// changed or a revision one names did (keys), and kept (same map, same
// version) when the result says the same.
func (r *Registry) publishSplitsLocked(prev *Snapshot, keys []Key, revs RevisionMap, invalid map[Key]error) (map[Key]*Split, uint64) {
	if !r.splitsDirty && !slices.ContainsFunc(keys, func(k Key) bool { _, ok := r.splitMembers[k]; return ok }) {
		return prev.Splits, prev.SplitVersion
	}
	r.splitsDirty = false
	splits := resolveSplits(r.splits, func(k Key) bool { return revs.Get(k) != nil }, invalid)
	if sameSplits(splits, prev.Splits) {
		return prev.Splits, prev.SplitVersion
	}
	return splits, r.version
}

// SameSplits reports whether s and old publish the same splits (both
// from one registry): a reader that routes splits can skip them then.
func (s *Snapshot) SameSplits(old *Snapshot) bool {
	return old != nil && s.SplitVersion == old.SplitVersion && s.origin == old.origin
}

// SortedSplits returns the splits ordered by key.
func (s *Snapshot) SortedSplits() []*Split {
	out := make([]*Split, 0, len(s.Splits))
	for _, sp := range s.Splits {
		out = append(out, sp)
	}
	slices.SortFunc(out, func(a, b *Split) int {
		if keyLess(a.Key, b.Key) {
			return -1
		}
		if a.Key == b.Key {
			return 0
		}
		return 1
	})
	return out
}
