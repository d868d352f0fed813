package xds

import (
	"time"

	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
)

// startWakeFlips records the ClusterLoadAssignments of revisions that
// woke with the module's cluster routes (translate.ClusterRoutes) as
// flips, so thaw_xds_flip_to_ack_seconds measures a wake from the
// registry change to the last Envoy's ACK of the new assignment (its
// cluster goes out just before it): with those routes a wake changes no
// virtual host, which is what a wake's flip is timed by on the hold path.
// versions are the cache's versions of the names.
func (s *Server) startWakeFlips(names []string, versions map[string]string, start time.Time) {
	if len(names) == 0 {
		return
	}
	s.flipsMu.Lock()
	defer s.flipsMu.Unlock()
	for _, n := range names {
		if v, ok := versions[n]; ok {
			s.flips[n] = flip{typeURL: resourcev3.EndpointType, version: v, start: start}
		}
	}
}
