package xds

import (
	"time"

	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"

	"github.com/thaw-dev/thaw/xds/translate"
)

// startWakeFlips records the ClusterLoadAssignments of revisions that
// woke with the module's cluster routes (translate.ClusterRoutes) as
// flips, so thaw_xds_flip_to_ack_seconds measures a wake from the
// registry change to the last Envoy's ACK of the new assignment (its
// cluster goes out just before it): with those routes a wake changes no
// virtual host, which is what a wake's flip is timed by on the hold path.
// versions are the cache's versions of the names. The names in ahead are
// clusters added before the revision's first backend
// (translate.ClusterAhead): timed apart, in
// thaw_xds_wake_cluster_to_ack_seconds, since the wake's flip is the
// later change of the assignment that lists the backend.
func (s *Server) startWakeFlips(names []string, ahead map[string]bool, versions map[string]string, start time.Time) {
	if len(names) == 0 {
		return
	}
	s.flipsMu.Lock()
	defer s.flipsMu.Unlock()
	for _, n := range names {
		if v, ok := versions[n]; ok {
			s.flips[n] = flip{typeURL: resourcev3.EndpointType, version: v, start: start, ahead: ahead[n]}
		}
	}
}

// startSleepFlips records the clusters of revisions back at zero on the
// module's cluster routes as removal flips, before their removal is sent,
// so thaw_xds_removal_to_ack_seconds measures a return to zero from the
// registry change to the last Envoy's ACK of the cluster's removal
// (removals carry no version, so flip_to_ack_seconds cannot time them).
// A cluster no Envoy holds has nothing to time and is not recorded.
func (s *Server) startSleepFlips(names []string, start time.Time) {
	if len(names) == 0 {
		return
	}
	s.flipsMu.Lock()
	defer s.flipsMu.Unlock()
	for _, n := range names {
		if s.tracker.HeldAnywhere(resourcev3.ClusterType, n) {
			s.flips[n] = flip{typeURL: resourcev3.ClusterType, start: start, removal: true}
		}
	}
}

// completeRemoval settles removal flip f of name once no stream holds the
// resource any more: observed at now when an ACK settled it (acked), or
// dropped unobserved when the last holder went away without ACKing (its
// stream closed). s.flipsMu is held.
func (s *Server) completeRemoval(name string, f flip, now time.Time, acked bool) {
	if s.tracker.HeldAnywhere(f.typeURL, name) {
		return
	}
	if acked {
		s.metrics.removalToAck.Observe(now.Sub(f.start).Seconds())
	}
	delete(s.flips, name)
}

// sleepRemovals returns the clusters st removes whose revision is still
// in st.snap, with the module's cluster routes (translate.ClusterRoutes)
// and after the first apply: revisions back at zero, whether the fast
// path (applyTransitions, which names them) or a full apply removes
// them; a deleted revision's cluster is not a return to zero. Nil
// otherwise. A full apply's revisions are walked only when clusters go,
// until each is found.
func (s *Server) sleepRemovals(st *staged) []string {
	if st.first || len(st.cds.del) == 0 || st.snap == nil || !translate.ClusterRoutes(&s.cfg) {
		return nil
	}
	if st.fast { // applyTransitions: its idle revisions, no walk (O(changed))
		return st.sleeping
	}
	gone := make(map[string]bool, len(st.cds.del))
	for _, n := range st.cds.del {
		gone[n] = false
	}
	var out []string
	for k := range st.snap.Revisions.Keys() {
		n := s.tr.ClusterName(k)
		if found, ok := gone[n]; ok && !found {
			gone[n] = true
			out = append(out, n)
			if len(out) == len(gone) {
				break
			}
		}
	}
	return out
}
