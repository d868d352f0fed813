package xds

import (
	"github.com/thaw-dev/thaw/revision"
)

// ConfirmedBy reports whether the Envoy with xDS node id node has ACKed
// the ClusterLoadAssignment the server built from the revision at a
// Generation >= generation, with no newer one in flight to it. False
// when that node holds no stream with the revision's endpoints, when the
// server has not applied that generation yet, or when the revision is
// unknown or skipped. The activator module's state server (modsvc) sends
// a backend to a node's module only once this holds for a generation that
// lists it: the module pins requests with a strict override host, which
// fails (503 no healthy upstream) for a host its Envoy does not know yet.
// Cheap: O(streams holding the resource).
func (s *Server) ConfirmedBy(node string, key revision.Key, generation uint64) bool {
	s.mu.RLock()
	ar, ok := s.revs[key]
	s.mu.RUnlock()
	if !ok || ar.generation < generation {
		return false
	}
	return s.tracker.AckedBy(node, ar.typeURL, ar.cla, s.confirmVersion(ar))
}

// Changed returns a channel closed at the server's next change: a
// snapshot applied, an ACK or NACK, a stream closed. Take it before
// checking ConfirmedBy, so no change between check and wait is missed.
func (s *Server) Changed() <-chan struct{} { return s.notify.wait() }
