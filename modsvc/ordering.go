package modsvc

import (
	"encoding/json"

	"github.com/thaw-dev/thaw/module/state"
	"github.com/thaw-dev/thaw/revision"
)

// Confirmer tells which endpoints an Envoy has ACKed (xds.Server
// implements it). The module pins a request to a backend with a strict
// upstream override host, which Envoy answers with 503 "no healthy
// upstream" when the revision's cluster does not list that host yet; so
// a backend is sent to a node's module only once that node ACKed the
// revision's ClusterLoadAssignment built from a registry generation that
// lists it. Removals are sent at once: the module stops picking a
// backend before Envoy forgets it.
type Confirmer interface {
	// ConfirmedBy reports whether node ACKed the revision's endpoints
	// built at a generation >= generation.
	ConfirmedBy(node string, key revision.Key, generation uint64) bool
	// Changed returns a channel closed at the next ACK or applied
	// snapshot.
	Changed() <-chan struct{}
}

// stream is one module's state stream: what it was last sent.
type stream struct {
	node      string
	confirmer Confirmer
	// sent holds, per revision key, the backends ("ip:port") last sent:
	// a revision not yet confirmed keeps those of them still ready (they
	// were confirmed before) and gets no new one.
	sent map[string]map[string]bool
	// prev is each revision's state as the last message left it
	// (incremental.go).
	prev map[string]*state.RevisionUpdate
	// maxHeld is sent with every update (state.Update.MaxHeld).
	maxHeld int64
	// snap, envoys and index are what the last message was built from,
	// and withheld the revisions it withheld backends of (perchange.go):
	// a later message rebuilds only those and the revisions snap.Changes
	// names. built counts revisions built (tests).
	snap          *revision.Snapshot
	envoys, index int
	withheld      map[revision.Key]int
	built         int
	// early lists the backends not confirmed yet, marked
	// state.BackendUpdate.Unconfirmed, instead of leaving them out
	// (Server.Early and the module's state.EarlyParam).
	early bool
}

// next returns the next message for snap (one JSON line): the full
// update when full (the stream's first message), else the revisions that
// changed since the previous message (incremental.go); whether there is
// one to send (always when full); and how many ready backends it
// withholds until an ACK.
func (st *stream) next(snap *revision.Snapshot, envoys, index int, full bool) (b []byte, changed bool, withheld int, err error) {
	var msg *state.Update
	if full || !st.patchable(envoys, index) {
		msg = st.rebuild(snap, envoys, index, full)
	} else {
		msg = st.patch(snap)
	}
	for _, n := range st.withheld {
		withheld += n
	}
	if msg == nil {
		return nil, false, withheld, nil
	}
	b, err = json.Marshal(msg)
	if err != nil {
		return nil, false, 0, err
	}
	return append(b, '\n'), true, withheld, nil
}

// allow returns the backends r may list for this stream's node: nil
// (all ready ones) once the node ACKed r's endpoints, else those last
// sent (see Confirmer).
func (st *stream) allow(r *revision.Revision) map[string]bool {
	if st.confirmer == nil || st.confirmer.ConfirmedBy(st.node, r.Key, r.Generation) {
		return nil
	}
	prev := st.sent[r.Key.String()]
	if prev == nil {
		prev = map[string]bool{}
	}
	return prev
}

// rebuild builds the whole state for snap (every revision) and returns
// what the stream sends for it: all of it when full, else what differs
// from the last message (incremental.go).
func (st *stream) rebuild(snap *revision.Snapshot, envoys, index int, full bool) *state.Update {
	u, withheld := updateWith(snap, envoys, index, st.allow, st.early)
	u.MaxHeld = st.maxHeld
	st.built += len(u.Revisions)
	st.remember(u)
	st.snap, st.envoys, st.index, st.withheld = snap, envoys, index, withheld
	return st.incremental(u, full)
}

// remember records the backends u sends per revision.
func (st *stream) remember(u *state.Update) {
	sent := make(map[string]map[string]bool, len(u.Revisions))
	for _, r := range u.Revisions {
		sent[r.Key] = addrSet(r.Backends)
	}
	st.sent = sent
}
