package modsvc

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
)

// Which state each module applied (state.SeqParam). A stream that asks
// numbers its updates (state.Update.Seq); the module echoes the number
// of the last one it applied (state.Report.Applied), and the stream
// records the registry snapshot Version that update was built from. xds
// removal first (xds.ModuleStates) sends an update's added endpoints to
// Envoy only once every module with such a stream applied a snapshot at
// least as new as the one that removed a backend: a module still
// listing the removed backend while Envoy lists the added one pins
// requests to a host Envoy no longer has (docs/activator.md, *Removal
// ordering*).

// maxPendingSeqs bounds the numbered updates a stream remembers while
// its module has not echoed them (a module that never reports): the
// oldest is forgotten, and its echo then confirms nothing.
const maxPendingSeqs = 64

// sentUpdate is one numbered update and the snapshot Version it carries.
type sentUpdate struct {
	seq, version uint64
}

// seqStream is one numbered state stream.
type seqStream struct {
	node string
	// pending are the numbered updates sent and not yet echoed, oldest
	// first; sent is set once one was written.
	pending []sentUpdate
	sent    bool
	// applied is the newest snapshot Version the module is known to
	// hold (its state equals what that snapshot gives it); valid once
	// hasApplied.
	applied    uint64
	hasApplied bool
}

// appliedStates is the set of numbered streams; safe for concurrent use.
type appliedStates struct {
	mu      sync.Mutex
	next    uint64
	streams map[*seqStream]struct{}
	ch      chan struct{}
}

// open registers a numbered stream of node; close it when it ends.
func (a *appliedStates) open(node string) *seqStream {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.streams == nil {
		a.streams = map[*seqStream]struct{}{}
		// Unique to this process: an echo of an earlier thaw's number
		// never matches (uint64 wraps around after 2^62 updates at least).
		a.next = rand.Uint64()>>2 + 1
	}
	st := &seqStream{node: node}
	a.streams[st] = struct{}{}
	a.notifyLocked()
	return st
}

// close forgets st: a module that is gone never holds removal first.
func (a *appliedStates) close(st *seqStream) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.streams, st)
	a.notifyLocked()
}

// sent returns the number of an update of st built from snapshot
// version, about to be written.
func (a *appliedStates) sent(st *seqStream, version uint64) uint64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.next++
	if len(st.pending) == maxPendingSeqs {
		st.pending = slices.Delete(st.pending, 0, 1)
	}
	st.pending = append(st.pending, sentUpdate{seq: a.next, version: version})
	st.sent = true
	return a.next
}

// unchanged records that snapshot version gives st's module exactly the
// state it was last sent (no message: nothing differs), so holding that
// state is holding version.
func (a *appliedStates) unchanged(st *seqStream, version uint64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	switch {
	case len(st.pending) > 0:
		st.pending[len(st.pending)-1].version = max(st.pending[len(st.pending)-1].version, version)
	case st.sent && st.hasApplied:
		if version > st.applied {
			st.applied = version
			a.notifyLocked()
		}
	}
}

// confirm records that node's module applied the update numbered seq. An
// unknown number (an earlier stream's, or forgotten) confirms nothing.
func (a *appliedStates) confirm(node string, seq uint64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for st := range a.streams {
		if st.node != node {
			continue
		}
		for i, p := range st.pending {
			if p.seq != seq {
				continue
			}
			// A stream's updates (a full one, then incremental ones)
			// are applied in order: applying this one is holding the
			// state of its snapshot, and the older ones are behind it.
			if !st.hasApplied || p.version > st.applied {
				st.applied, st.hasApplied = p.version, true
			}
			st.pending = slices.Delete(st.pending, 0, i+1)
			a.notifyLocked()
			return
		}
	}
}

// lagging returns, sorted, the nodes of at most limit numbered streams
// whose module is not known to hold a snapshot of Version >= version.
func (a *appliedStates) lagging(version uint64, limit int) []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []string
	for st := range a.streams {
		if st.hasApplied && st.applied >= version {
			continue
		}
		out = append(out, st.node)
		if len(out) == limit {
			break
		}
	}
	slices.Sort(out)
	return out
}

// changed returns a channel closed at the next confirmation, stream
// opened or closed.
func (a *appliedStates) changed() <-chan struct{} {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.ch == nil {
		a.ch = make(chan struct{})
	}
	return a.ch
}

func (a *appliedStates) notifyLocked() {
	if a.ch != nil {
		close(a.ch)
		a.ch = nil
	}
}

// LaggingModules returns the node ids (sorted, at most limit) of the
// modules with a numbered state stream open (state.SeqParam) that have
// not confirmed applying a state built from a registry snapshot of
// Version >= version; none when every one did. A stream whose module
// has applied nothing of it yet (its first update deferred, see
// FirstUpdateWait, or not echoed yet) lags: that module may still serve
// an older state. Modules without a numbered stream (built before
// state.SeqParam) are not counted. Implements xds.ModuleStates.
func (s *Server) LaggingModules(version uint64, limit int) []string {
	return s.seqs.lagging(version, limit)
}

// ModulesChanged returns a channel closed when a module confirms a state
// or a numbered stream opens or closes. Implements xds.ModuleStates.
func (s *Server) ModulesChanged() <-chan struct{} { return s.seqs.changed() }

// withSeq returns the encoded update line b (a JSON object and '\n')
// with field "seq" set to seq, appended in place of its closing brace:
// the number is taken only when the line is written (a deferred first
// update is built again before it goes out), without a second encoding.
func withSeq(b []byte, seq uint64) []byte {
	end := bytes.LastIndexByte(b, '}')
	if end < 0 {
		return b
	}
	out := make([]byte, 0, len(b)+28)
	out = append(out, b[:end]...)
	if bytes.IndexByte(b[:end], ':') >= 0 { // not the empty object
		out = append(out, ',')
	}
	out = append(out, `"seq":`...)
	out = strconv.AppendUint(out, seq, 10)
	return append(out, b[end:]...)
}
