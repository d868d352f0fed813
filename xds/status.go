package xds

import (
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"

	"github.com/thaw-dev/thaw/revision"
	"github.com/thaw-dev/thaw/xds/ack"
	"github.com/thaw-dev/thaw/xds/translate"
)

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
	NACKs []ack.NACK
}

// Nodes returns the connected streams sorted by node id, then stream.
func (s *Server) Nodes() []ack.NodeStatus { return s.tracker.Nodes() }

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
	st.NACKs = s.tracker.NACKs(keep)
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
