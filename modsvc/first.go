package modsvc

import (
	"time"

	"k8s.io/utils/clock"
)

// DefaultFirstUpdateWait bounds how long a state stream's first update
// waits for the node's ACK of backends it would withhold (see
// Server.FirstUpdateWait). Envoy reconnects its xDS stream on its own
// back-off after a thaw restart (seconds: 1.4 to 13 s were measured), so
// the bound covers that back-off in the common case.
const DefaultFirstUpdateWait = 15 * time.Second

// firstWait is the bound of a stream's first update: how long it may be
// deferred while it withholds backends the node has not ACKed yet.
func (s *Server) firstWait() time.Duration {
	switch {
	case s.FirstUpdateWait < 0:
		return 0
	case s.FirstUpdateWait == 0:
		return DefaultFirstUpdateWait
	}
	return s.FirstUpdateWait
}

func (s *Server) clock() clock.Clock {
	if s.Clock == nil {
		return clock.RealClock{}
	}
	return s.Clock
}
