package ack

import (
	"context"
	"slices"
	"sort"
	"sync"
	"time"
)

// maxNACKsPerType bounds the NACK history kept per stream and type.
const maxNACKsPerType = 8

// StreamKey identifies one xDS stream; delta and state-of-the-world stream
// ids are counted separately by go-control-plane.
type StreamKey struct {
	Delta bool
	ID    int64
}

// NACK is one rejected response: which node, which resource type, which
// resources the response carried (names), Envoy's error message and when.
type NACK struct {
	Node    string
	TypeURL string
	// Resources are the names in the rejected response (updated or
	// removed). Names of resources a later response got ACKed are dropped;
	// a NACK with no names left is forgotten.
	Resources []string
	Message   string
	At        time.Time
}

// Response is one response as tracked: resource names with versions,
// and removed names.
type Response struct {
	TypeURL string
	// Names are the resources the response carried; Versions[i] is the
	// version (content hash) of Names[i].
	Names    []string
	Versions []string
	// Removed are the names the response removed (delta).
	Removed []string
	SentAt  time.Time
}

// Tracker records per stream which resource versions were sent, ACKed and
// NACKed. It is fed by the server callbacks; all methods are safe for
// concurrent use.
type Tracker struct {
	mu      sync.RWMutex
	streams map[StreamKey]*streamState
	// nodes counts the streams of each node id that named itself.
	nodes map[string]nodeStreams
	// edsStreams counts the open non-ADS EDS streams.
	edsStreams int
	// holders indexes, per type URL and resource name, the streams that
	// hold the resource (streamState.holds), so ackedEverywhere costs
	// O(holders) instead of O(streams): with one EDS stream per revision
	// an Envoy Gateway Envoy holds thousands of streams. A name's holders
	// are a slice, not a map: they are few (one per Envoy holding the
	// name), and at 10,000 revisions a map per name cost ~9 MB per Envoy.
	holders map[string]map[string][]*streamState
}

// nodeStreams counts one node id's streams by kind.
type nodeStreams struct{ ads, eds int }

func NewTracker() *Tracker {
	return &Tracker{streams: map[StreamKey]*streamState{}, nodes: map[string]nodeStreams{},
		holders: map[string]map[string][]*streamState{}}
}

// Open records a new stream (eds: a non-ADS EDS stream); closer (may be
// nil) ends it.
func (t *Tracker) Open(k StreamKey, eds bool, now time.Time, closer context.CancelCauseFunc) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.streams[k] = &streamState{key: k, eds: eds, connectedAt: now, sent: map[string]*Response{},
		acked: map[string]map[string]string{}, pending: map[string]map[string]int{}, nacks: map[string][]*NACK{},
		close: closer}
	if eds {
		t.edsStreams++
	}
}

// Close forgets a stream: a disconnected node no longer counts.
func (t *Tracker) Close(k StreamKey) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.streams[k]
	if s == nil {
		return
	}
	if s.nodeID != "" {
		n := t.nodes[s.nodeID]
		if s.eds {
			n.eds--
		} else {
			n.ads--
		}
		if n.ads <= 0 && n.eds <= 0 {
			delete(t.nodes, s.nodeID)
		} else {
			t.nodes[s.nodeID] = n
		}
	}
	if s.eds {
		t.edsStreams--
	}
	for typ, names := range s.acked {
		for n := range names {
			t.unindex(typ, n, k)
		}
	}
	for typ, names := range s.pending {
		for n := range names {
			t.unindex(typ, n, k)
		}
	}
	delete(t.streams, k)
}

// reindex updates holders for one name of stream s after its acked or
// pending state changed. Callers hold t.mu for writing.
func (t *Tracker) reindex(s *streamState, typeURL, name string) {
	if !s.holds(typeURL, name) {
		t.unindex(typeURL, name, s.key)
		return
	}
	byName := t.holders[typeURL]
	if byName == nil {
		byName = map[string][]*streamState{}
		t.holders[typeURL] = byName
	}
	if set := byName[name]; !slices.Contains(set, s) {
		byName[name] = append(set, s)
	}
}

func (t *Tracker) unindex(typeURL, name string, k StreamKey) {
	set := t.holders[typeURL][name]
	i := slices.IndexFunc(set, func(s *streamState) bool { return s.key == k })
	if i < 0 {
		return
	}
	last := len(set) - 1
	set[i], set[last] = set[last], nil
	if last == 0 {
		delete(t.holders[typeURL], name)
		return
	}
	t.holders[typeURL][name] = set[:last]
}

func (t *Tracker) NodeID(k StreamKey) string {
	t.mu.RLock()
	defer t.mu.RUnlock()
	if s := t.streams[k]; s != nil {
		return s.nodeID
	}
	return ""
}

// Sent records a response about to be sent.
func (t *Tracker) Sent(k StreamKey, nonce string, r *Response) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.streams[k]
	if s == nil {
		return
	}
	s.sent[nonce] = r
	p := s.pending[r.TypeURL]
	if p == nil {
		p = map[string]int{}
		s.pending[r.TypeURL] = p
	}
	for _, n := range r.Names {
		p[n]++
		t.reindex(s, r.TypeURL, n)
	}
	for _, n := range r.Removed {
		p[n]++
		t.reindex(s, r.TypeURL, n)
	}
}

// reindexResponse updates holders for every name r carried.
func (t *Tracker) reindexResponse(s *streamState, r *Response) {
	for _, n := range r.Names {
		t.reindex(s, r.TypeURL, n)
	}
	for _, n := range r.Removed {
		t.reindex(s, r.TypeURL, n)
	}
}

// answered settles the response with nonce on stream k, answered at now:
// the stream and the response, or a nil response when the stream or the
// nonce is unknown. t.mu is held.
func (t *Tracker) answered(k StreamKey, nonce string, now time.Time) (*streamState, *Response) {
	s := t.streams[k]
	if s == nil {
		return nil, nil
	}
	r := s.settle(nonce)
	if r == nil {
		return s, nil
	}
	s.answeredAt = now
	return s, r
}

// Ack records that the stream accepted the response with nonce. It returns
// the response, or nil when the nonce is unknown.
func (t *Tracker) Ack(k StreamKey, nonce string, now time.Time) *Response {
	t.mu.Lock()
	defer t.mu.Unlock()
	s, r := t.answered(k, nonce, now)
	if r == nil {
		return nil
	}
	a := s.acked[r.TypeURL]
	if a == nil {
		a = make(map[string]string, len(r.Names))
		s.acked[r.TypeURL] = a
	}
	for i, n := range r.Names {
		a[n] = r.Versions[i]
	}
	for _, n := range r.Removed {
		delete(a, n)
	}
	t.reindexResponse(s, r)
	s.clearNACKs(r)
	return r
}

// AssumeAcked records versions the stream reported holding when it opened
// (delta initial_resource_versions). Names the stream has already ACKed on
// this stream keep their ACKed version.
func (t *Tracker) AssumeAcked(k StreamKey, typeURL string, versions map[string]string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.streams[k]
	if s == nil {
		return
	}
	a := s.acked[typeURL]
	if a == nil {
		a = make(map[string]string, len(versions))
		s.acked[typeURL] = a
	}
	for n, v := range versions {
		if _, ok := a[n]; !ok {
			a[n] = v
			t.reindex(s, typeURL, n)
		}
	}
}

// Nack records that the stream rejected the response with nonce. It
// returns the NACK record, or nil when the nonce is unknown.
func (t *Tracker) Nack(k StreamKey, nonce, message string, now time.Time) *NACK {
	t.mu.Lock()
	defer t.mu.Unlock()
	s, r := t.answered(k, nonce, now)
	if r == nil {
		return nil
	}
	t.reindexResponse(s, r)
	names := make([]string, 0, len(r.Names)+len(r.Removed))
	names = append(append(names, r.Names...), r.Removed...)
	sort.Strings(names)
	nk := &NACK{Node: s.nodeID, TypeURL: r.TypeURL, Resources: names, Message: message, At: now}
	list := append(s.nacks[r.TypeURL], nk)
	if len(list) > maxNACKsPerType {
		list = list[len(list)-maxNACKsPerType:]
	}
	s.nacks[r.TypeURL] = list
	return nk
}
