package kube

import (
	"encoding/json"

	"github.com/thaw-dev/thaw/revision"
)

// statusCache holds the thaw.dev/status value every annotated revision
// should carry, rendered from the registry's changes only: a tick renders
// (JSON-encodes) the revisions that changed since the snapshot it last saw,
// outside the platform lock that GetScale takes for every revision on every
// autoscaler tick. It is owned by the report loop's goroutine.
type statusCache struct {
	snap *revision.Snapshot
	// want: key → the value its annotation should have (absent: the
	// registry has not published the revision).
	want map[revision.Key]string
	// due: keys whose annotation may differ from want (value changed, seen
	// annotation changed, or a patch failed); compared under the lock.
	due map[revision.Key]struct{}
}

// update renders the values of the revisions that changed between the last
// snapshot seen and snap (every revision the first time).
func (c *statusCache) update(snap *revision.Snapshot) {
	if c.want == nil {
		c.want, c.due = map[revision.Key]string{}, map[revision.Key]struct{}{}
	}
	for key := range snap.Changes(c.snap) {
		if v, ok := statusOf(snap, key); ok {
			c.want[key] = v
		} else {
			delete(c.want, key)
		}
		c.due[key] = struct{}{}
	}
	c.snap = snap
}

// dueLocked returns the patches of the annotated workloads whose annotation
// differs from its value, among the due keys and the keys in seen (whose
// annotation changed in the cache). A key stays due while its workload is
// not known yet (its registry entry came first). Call with the platform
// lock held: it costs a map lookup per due key, nothing per quiet revision.
func (c *statusCache) dueLocked(revs map[revision.Key]*trackedTarget, seen map[revision.Key]struct{}) []statusPatch {
	if c.want == nil {
		return nil
	}
	for k := range seen {
		c.due[k] = struct{}{}
	}
	var todo []statusPatch
	for key := range c.due {
		st := revs[key]
		v, ok := c.want[key]
		switch {
		case !ok || (st != nil && st.crd != nil):
			delete(c.due, key) // not published, or a Revision (its status is elsewhere)
		case st == nil || st.ref == nil:
			// the workload is not known yet: stays due
		case v == st.status:
			delete(c.due, key)
		default:
			todo = append(todo, statusPatch{key: key, kind: st.kind, value: v, log: st.log})
		}
	}
	return todo
}

// patched records that key's annotation now carries value.
func (c *statusCache) patched(key revision.Key, value string) {
	if c.want[key] == value {
		delete(c.due, key)
	}
}

// statusOf renders the thaw.dev/status value of a revision as the snapshot
// has it; ok is false when the registry has not published it.
func statusOf(snap *revision.Snapshot, key revision.Key) (string, bool) {
	var s Status
	if bad, ok := snap.Invalid[key]; ok {
		s = Status{Mode: "invalid", Desired: -1, Error: describeError(bad)}
	} else if rev := snap.Get(key); rev != nil {
		s = Status{Mode: rev.Mode.String(), Desired: rev.DesiredScale, Ready: int32(len(rev.ReadyBackends()))}
	} else {
		return "", false
	}
	b, err := json.Marshal(s)
	if err != nil {
		return "", false
	}
	return string(b), true
}
