package state

// applyBatch is how many revisions Apply finds or adds per hold of the
// table's lock: a full update of 100,000 revisions takes the lock ~100
// times instead of 100,000, so Envoy's main thread, which adds one
// revision per route configuration at the same moment (its start), meets
// it held rarely, and for ~0.1 ms at most (a 1,024-key batch of map
// operations), never for the whole update.
const applyBatch = 1024

// revisionsOf returns the revision of each of u's revisions (nil past
// MaxRevisions), found or added as Revision does.
func (t *Table) revisionsOf(u *Update) []*Revision {
	out := make([]*Revision, len(u.Revisions))
	for lo := 0; lo < len(out); lo += applyBatch {
		hi := min(lo+applyBatch, len(out))
		t.mu.Lock()
		for i := lo; i < hi; i++ {
			out[i] = t.revisionLocked(u.Revisions[i].Key)
		}
		t.mu.Unlock()
	}
	return out
}
