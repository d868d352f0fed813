package xds

import (
	"context"
	"slices"
	"sort"
	"sync"
	"time"

	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
)

// maxNACKsPerType bounds the NACK history kept per stream and type.
const maxNACKsPerType = 8

// streamKey identifies one xDS stream; delta and state-of-the-world stream
// ids are counted separately by go-control-plane.
type streamKey struct {
	delta bool
	id    int64
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

// streamState is what one stream has been sent and has acknowledged.
type streamState struct {
	key     streamKey
	nodeID  string
	cluster string
	// eds: a non-ADS EndpointDiscoveryService stream (one per EDS cluster
	// whose config source is thaw_xds, e.g. Envoy Gateway's Envoy); it
	// carries only ClusterLoadAssignments and has its own limits.
	eds         bool
	connectedAt time.Time
	// sent maps a response nonce to what it carried, until ACK or NACK.
	sent map[string]*sentResponse
	// acked maps type URL → resource name → the version (content hash) the
	// node last ACKed.
	acked map[string]map[string]string
	// pending counts, per type and name, responses carrying the name that
	// are not yet ACKed or NACKed.
	pending map[string]map[string]int
	nacks   map[string][]*NACK
	// close ends the stream (from TapHandle; nil without it).
	close context.CancelCauseFunc
	// excluded: thaw found the stream stalled and closed it; it no longer
	// counts for confirmation (limits.go).
	excluded bool
	// answeredAt is when the stream last ACKed or NACKed a response: a
	// stream that answers is not stalled, even while one response waits
	// (Envoy ACKs a CDS response only once every cluster has warmed, which
	// takes minutes at 100,000 revisions while EDS answers keep coming).
	answeredAt time.Time
}

// sentResponse is one response as tracked: resource names with versions,
// and removed names.
type sentResponse struct {
	typeURL  string
	names    []string
	versions []string
	removed  []string
	sentAt   time.Time
}

// tracker records per stream which resource versions were sent, ACKed and
// NACKed. It is fed by the server callbacks; all methods are safe for
// concurrent use.
type tracker struct {
	mu      sync.RWMutex
	streams map[streamKey]*streamState
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

func newTracker() *tracker {
	return &tracker{streams: map[streamKey]*streamState{}, nodes: map[string]nodeStreams{},
		holders: map[string]map[string][]*streamState{}}
}

// open records a new stream (eds: a non-ADS EDS stream); closer (may be
// nil) ends it.
func (t *tracker) open(k streamKey, eds bool, now time.Time, closer context.CancelCauseFunc) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.streams[k] = &streamState{key: k, eds: eds, connectedAt: now, sent: map[string]*sentResponse{},
		acked: map[string]map[string]string{}, pending: map[string]map[string]int{}, nacks: map[string][]*NACK{},
		close: closer}
	if eds {
		t.edsStreams++
	}
}

// close forgets a stream: a disconnected node no longer counts.
func (t *tracker) close(k streamKey) {
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
func (t *tracker) reindex(s *streamState, typeURL, name string) {
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

func (t *tracker) unindex(typeURL, name string, k streamKey) {
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

func (t *tracker) nodeID(k streamKey) string {
	t.mu.RLock()
	defer t.mu.RUnlock()
	if s := t.streams[k]; s != nil {
		return s.nodeID
	}
	return ""
}

// sent records a response about to be sent.
func (t *tracker) sent(k streamKey, nonce string, r *sentResponse) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.streams[k]
	if s == nil {
		return
	}
	s.sent[nonce] = r
	p := s.pending[r.typeURL]
	if p == nil {
		p = map[string]int{}
		s.pending[r.typeURL] = p
	}
	for _, n := range r.names {
		p[n]++
		t.reindex(s, r.typeURL, n)
	}
	for _, n := range r.removed {
		p[n]++
		t.reindex(s, r.typeURL, n)
	}
}

// reindexResponse updates holders for every name r carried.
func (t *tracker) reindexResponse(s *streamState, r *sentResponse) {
	for _, n := range r.names {
		t.reindex(s, r.typeURL, n)
	}
	for _, n := range r.removed {
		t.reindex(s, r.typeURL, n)
	}
}

// settle removes a response from the pending set and returns it, or nil
// for an unknown nonce (already settled, or from before a reconnect).
func (s *streamState) settle(nonce string) *sentResponse {
	r := s.sent[nonce]
	if r == nil {
		return nil
	}
	delete(s.sent, nonce)
	p := s.pending[r.typeURL]
	dec := func(n string) {
		if p[n] <= 1 {
			delete(p, n)
		} else {
			p[n]--
		}
	}
	for _, n := range r.names {
		dec(n)
	}
	for _, n := range r.removed {
		dec(n)
	}
	return r
}

// ack records that the stream accepted the response with nonce. It returns
// the response, or nil when the nonce is unknown.
func (t *tracker) ack(k streamKey, nonce string, now time.Time) *sentResponse {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.streams[k]
	if s == nil {
		return nil
	}
	r := s.settle(nonce)
	if r == nil {
		return nil
	}
	s.answeredAt = now
	a := s.acked[r.typeURL]
	if a == nil {
		a = make(map[string]string, len(r.names))
		s.acked[r.typeURL] = a
	}
	for i, n := range r.names {
		a[n] = r.versions[i]
	}
	for _, n := range r.removed {
		delete(a, n)
	}
	t.reindexResponse(s, r)
	s.clearNACKs(r)
	return r
}

// assumeAcked records versions the stream reported holding when it opened
// (delta initial_resource_versions). Names the stream has already ACKed on
// this stream keep their ACKed version.
func (t *tracker) assumeAcked(k streamKey, typeURL string, versions map[string]string) {
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

// clearNACKs drops names that were just ACKed from earlier NACKs.
func (s *streamState) clearNACKs(r *sentResponse) {
	list := s.nacks[r.typeURL]
	if len(list) == 0 {
		return
	}
	done := make(map[string]bool, len(r.names)+len(r.removed))
	for _, n := range r.names {
		done[n] = true
	}
	for _, n := range r.removed {
		done[n] = true
	}
	kept := list[:0]
	for _, nk := range list {
		left := nk.Resources[:0:0]
		for _, n := range nk.Resources {
			if !done[n] {
				left = append(left, n)
			}
		}
		if len(left) > 0 {
			nk.Resources = left
			kept = append(kept, nk)
		}
	}
	s.nacks[r.typeURL] = kept
}

// nack records that the stream rejected the response with nonce. It
// returns the NACK record, or nil when the nonce is unknown.
func (t *tracker) nack(k streamKey, nonce, message string, now time.Time) *NACK {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.streams[k]
	if s == nil {
		return nil
	}
	r := s.settle(nonce)
	if r == nil {
		return nil
	}
	s.answeredAt = now
	t.reindexResponse(s, r)
	names := make([]string, 0, len(r.names)+len(r.removed))
	names = append(append(names, r.names...), r.removed...)
	sort.Strings(names)
	nk := &NACK{Node: s.nodeID, TypeURL: r.typeURL, Resources: names, Message: message, At: now}
	list := append(s.nacks[r.typeURL], nk)
	if len(list) > maxNACKsPerType {
		list = list[len(list)-maxNACKsPerType:]
	}
	s.nacks[r.typeURL] = list
	return nk
}

// ackedEverywhere reports whether at least one stream holds the named
// resource and every such stream has ACKed version with nothing newer in
// flight for it. Streams count once they were sent the resource or
// reported holding it (subscribed to it): one that never subscribed does
// not route with it, and will be sent the current version when it does.
// Streams thaw closed as stalled (excluded) do not count (limits.go).
func (t *tracker) ackedEverywhere(typeURL, name, version string) bool {
	t.mu.RLock()
	defer t.mu.RUnlock()
	counted := 0
	for _, s := range t.holders[typeURL][name] {
		if s.excluded {
			continue
		}
		if !s.ackedCurrent(typeURL, name, version) {
			return false
		}
		counted++
	}
	return counted > 0
}

// holds reports whether the stream was sent, or reported holding, the
// named resource (it subscribed to it).
func (s *streamState) holds(typeURL, name string) bool {
	if _, ok := s.acked[typeURL][name]; ok {
		return true
	}
	return s.pending[typeURL][name] > 0
}

func (s *streamState) ackedCurrent(typeURL, name, version string) bool {
	return s.acked[typeURL][name] == version && s.pending[typeURL][name] == 0
}

// allAcked reports whether every stream that subscribed to typeURL (ACKed
// something of it) has ACKed each name at its version, or gave up waiting
// because it no longer exists. Streams that have not reached typeURL yet
// will receive the current state anyway and are not waited for.
func (t *tracker) allAcked(typeURL string, want map[string]string) bool {
	t.mu.RLock()
	defer t.mu.RUnlock()
	for _, s := range t.streams {
		if s.excluded || (len(s.acked[typeURL]) == 0 && len(s.pending[typeURL]) == 0) {
			continue
		}
		for n, v := range want {
			if !s.ackedCurrent(typeURL, n, v) {
				return false
			}
		}
	}
	return true
}

// allRemoved reports whether every stream that subscribed to typeURL has
// ACKed the removal of each of names (holds none of them, with nothing
// in flight for them).
func (t *tracker) allRemoved(typeURL string, names []string) bool {
	t.mu.RLock()
	defer t.mu.RUnlock()
	for _, s := range t.streams {
		if s.excluded || (len(s.acked[typeURL]) == 0 && len(s.pending[typeURL]) == 0) {
			continue
		}
		for _, n := range names {
			if s.holds(typeURL, n) {
				return false
			}
		}
	}
	return true
}

// covers reports whether stream k has ACKed some version of every name in
// want (type URL → names).
func (t *tracker) covers(k streamKey, want map[string]map[string]string) bool {
	t.mu.RLock()
	defer t.mu.RUnlock()
	s := t.streams[k]
	if s == nil {
		return false
	}
	for typ, names := range want {
		a := s.acked[typ]
		if len(a) < len(names) {
			return false
		}
	}
	for typ, names := range want {
		a := s.acked[typ]
		for n := range names {
			if _, ok := a[n]; !ok {
				return false
			}
		}
	}
	return true
}

// keys returns the keys of the connected streams.
func (t *tracker) keys() []streamKey {
	t.mu.RLock()
	defer t.mu.RUnlock()
	out := make([]streamKey, 0, len(t.streams))
	for k := range t.streams {
		out = append(out, k)
	}
	return out
}

// count returns the number of connected streams.
func (t *tracker) count() int {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return len(t.streams)
}

// typeNames maps type URLs to the short names status output uses.
var typeNames = map[string]string{
	resourcev3.ListenerType:    "listeners",
	resourcev3.RouteType:       "routes",
	resourcev3.ClusterType:     "clusters",
	resourcev3.EndpointType:    "endpoints",
	resourcev3.VirtualHostType: "virtualhosts",
}

// shortType returns the short name of a type URL ("endpoints"), or the URL.
func shortType(typeURL string) string {
	if n, ok := typeNames[typeURL]; ok {
		return n
	}
	return typeURL
}
