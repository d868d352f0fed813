package xds

import (
	"slices"
	"sync"
	"time"
)

// ExcludedNode is a stream thaw closed because it stalled.
type ExcludedNode struct {
	// ID is Envoy's node.id ("" when it never sent a request).
	ID string
	// Reason is "ack_timeout" or "no_request".
	Reason string
	// At is when thaw closed the stream.
	At time.Time
	// Pending is how many responses it had left unanswered.
	Pending int
}

// maxExcludedKept bounds the exclusions Excluded reports.
const maxExcludedKept = 32

// excludedLog keeps the most recent exclusions for status output.
type excludedLog struct {
	mu   sync.Mutex
	list []ExcludedNode
}

func (s *Server) recordExcluded(e ExcludedNode) {
	s.excluded.mu.Lock()
	defer s.excluded.mu.Unlock()
	s.excluded.list = append(s.excluded.list, e)
	if n := len(s.excluded.list); n > maxExcludedKept {
		s.excluded.list = slices.Delete(s.excluded.list, 0, n-maxExcludedKept)
	}
}

// Excluded returns the most recent streams (at most 32, oldest first) that
// thaw closed and excluded from confirmation because they left a response
// unanswered, or sent nothing, for the ack timeout.
func (s *Server) Excluded() []ExcludedNode {
	s.excluded.mu.Lock()
	defer s.excluded.mu.Unlock()
	return slices.Clone(s.excluded.list)
}
