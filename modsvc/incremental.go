package modsvc

import (
	"reflect"

	"github.com/thaw-dev/thaw/module/state"
)

// incremental returns what the stream sends for full update u: u itself
// when full (a stream's first message: the module replaces its whole
// state), else an incremental update (Full false) with only the
// revisions whose state differs from the last message's and the keys no
// longer listed (Removed); nil when nothing differs. u becomes the state
// the next message is compared with, so the caller must send every
// message it gets (a full one may be replaced by a later full one before
// it is sent: a deferred first update).
//
// Why not a full update every time: at 100,000 revisions one is 6.6 MB,
// ~0.5 s for thaw to build and encode and ~0.7 s for the module inside
// Envoy to decode and apply, for each change (BenchmarkStateUpdate100k,
// docs/scaling.md), and a cold start waits for one or two of them.
func (st *stream) incremental(u *state.Update, full bool) *state.Update {
	prev := st.prev
	cur := make(map[string]*state.RevisionUpdate, len(u.Revisions))
	for i := range u.Revisions {
		cur[u.Revisions[i].Key] = &u.Revisions[i]
	}
	st.prev = cur
	if full || prev == nil {
		return u
	}
	d := &state.Update{}
	for i := range u.Revisions {
		r := &u.Revisions[i]
		if old, ok := prev[r.Key]; !ok || !reflect.DeepEqual(old, r) {
			d.Revisions = append(d.Revisions, *r)
		}
	}
	for k := range prev {
		if _, ok := cur[k]; !ok {
			d.Removed = append(d.Removed, k)
		}
	}
	if len(d.Revisions) == 0 && len(d.Removed) == 0 {
		return nil
	}
	return d
}
