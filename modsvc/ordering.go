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
}

// next returns the next message for snap (one JSON line): the full
// update when full (the stream's first message), else the revisions that
// changed since the previous message (incremental.go); whether there is
// one to send (always when full); and how many ready backends it
// withholds until an ACK.
func (st *stream) next(snap *revision.Snapshot, envoys, index int, full bool) (b []byte, changed bool, withheld int, err error) {
	var allowed func(*revision.Revision) map[string]bool
	if st.confirmer != nil {
		allowed = func(r *revision.Revision) map[string]bool {
			if st.confirmer.ConfirmedBy(st.node, r.Key, r.Generation) {
				return nil
			}
			prev := st.sent[r.Key.String()]
			if prev == nil {
				prev = map[string]bool{}
			}
			return prev
		}
	}
	u, withheld := updateWith(snap, envoys, index, allowed)
	u.MaxHeld = st.maxHeld
	st.remember(u)
	msg := st.incremental(u, full)
	if msg == nil {
		return nil, false, withheld, nil
	}
	b, err = json.Marshal(msg)
	if err != nil {
		return nil, false, 0, err
	}
	return append(b, '\n'), true, withheld, nil
}

// remember records the backends u sends per revision.
func (st *stream) remember(u *state.Update) {
	sent := make(map[string]map[string]bool, len(u.Revisions))
	for _, r := range u.Revisions {
		m := make(map[string]bool, len(r.Backends))
		for _, b := range r.Backends {
			m[b.Addr] = true
		}
		sent[r.Key] = m
	}
	st.sent = sent
}
