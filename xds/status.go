package xds

import (
	"cmp"
	"slices"
	"time"

	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"

	"github.com/thaw-dev/thaw/revision"
	"github.com/thaw-dev/thaw/xds/translate"
)

// NodeStatus is one connected xDS stream, normally one Envoy.
type NodeStatus struct {
	// ID and Cluster are Envoy's node.id and node.cluster ("" until its
	// first request).
	ID      string
	Cluster string
	// Delta is true for incremental (delta) ADS streams.
	Delta       bool
	StreamID    int64
	ConnectedAt time.Time
	// Acked counts the resources the node has ACKed, by short type name
	// ("listeners", "routes", "clusters", "endpoints").
	Acked map[string]int
	// Pending is the number of responses sent and not yet ACKed or NACKed.
	Pending int
	// NACKs are the node's recent rejections whose resources have not been
	// ACKed since, oldest first per type.
	NACKs []NACK
}

// RevisionStatus is the xDS view of one revision.
type RevisionStatus struct {
	// Applied is true when the revision's resources are in the caches.
	Applied bool
	// Generation is the revision Generation the caches were built from.
	Generation uint64
	// Confirmed is ConfirmedEverywhere at Generation.
	Confirmed bool
	// Skipped is why the revision was left out of the translation (host
	// collision, invalid traffic split), or nil.
	Skipped error
	// NACKs are rejections by connected nodes naming the revision's cluster
	// or endpoints, or the shared route configuration thaw_http.
	NACKs []NACK
}

// Nodes returns the connected streams sorted by node id, then stream.
func (s *Server) Nodes() []NodeStatus {
	t := s.tracker
	t.mu.RLock()
	out := make([]NodeStatus, 0, len(t.streams))
	for _, st := range t.streams {
		ns := NodeStatus{ID: st.nodeID, Cluster: st.cluster, Delta: st.key.delta, StreamID: st.key.id,
			ConnectedAt: st.connectedAt, Acked: map[string]int{}, Pending: len(st.sent)}
		for typ, a := range st.acked {
			ns.Acked[shortType(typ)] = len(a)
		}
		ns.NACKs = st.nackList(nil)
		out = append(out, ns)
	}
	t.mu.RUnlock()
	slices.SortFunc(out, func(a, b NodeStatus) int {
		if c := cmp.Compare(a.ID, b.ID); c != 0 {
			return c
		}
		if a.Delta != b.Delta {
			if a.Delta {
				return 1
			}
			return -1
		}
		return cmp.Compare(a.StreamID, b.StreamID)
	})
	return out
}

// nackList copies the stream's NACKs, keeping those that name a resource
// for which keep returns true (all when keep is nil). Call under t.mu.
func (st *streamState) nackList(keep func(typeURL, name string) bool) []NACK {
	var out []NACK
	for _, typ := range resourceTypes {
		for _, nk := range st.nacks[typ] {
			if keep != nil && !slices.ContainsFunc(nk.Resources, func(n string) bool { return keep(typ, n) }) {
				continue
			}
			c := *nk
			c.Resources = slices.Clone(nk.Resources)
			out = append(out, c)
		}
	}
	return out
}

// Status returns the xDS view of one revision: applied generation,
// confirmation, skip reason and NACKs.
func (s *Server) Status(key revision.Key) RevisionStatus {
	s.mu.RLock()
	ar, ok := s.revs[key]
	skipped := s.skipped[key]
	s.mu.RUnlock()
	st := RevisionStatus{Applied: ok, Generation: ar.generation, Skipped: skipped}
	if ok {
		st.Confirmed = s.ConfirmedEverywhere(key, ar.generation)
	}
	name := revision.ClusterName(key)
	vhName := translate.VirtualHostName(name)
	keep := func(typeURL, n string) bool {
		return n == name || (typeURL == resourcev3.RouteType && n == translate.HTTPListenerName) ||
			(typeURL == resourcev3.VirtualHostType && n == vhName)
	}
	s.tracker.mu.RLock()
	for _, stream := range s.tracker.streams {
		st.NACKs = append(st.NACKs, stream.nackList(keep)...)
	}
	s.tracker.mu.RUnlock()
	slices.SortFunc(st.NACKs, func(a, b NACK) int {
		if c := a.At.Compare(b.At); c != 0 {
			return c
		}
		return cmp.Compare(a.Node, b.Node)
	})
	return st
}

// SkipReason returns why the last translation left the revision out (a
// *HostCollisionError, a *SplitError), or nil when it is routed or
// unknown. Cheap: one map read under a read lock.
func (s *Server) SkipReason(key revision.Key) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.skipped[key]
}
