package xds

import (
	"context"
	"slices"
	"sync"
	"time"
)

// claimNode names the node of stream k unless that would exceed maxNodes
// distinct node ids, or maxPerNode ADS streams (maxEDSPerNode non-ADS EDS
// streams, for an EDS stream) of id. It returns the node's stream count of
// the stream's kind and the number of node ids before the claim, and
// whether the claim was made.
func (t *tracker) claimNode(k streamKey, id, cluster string, maxNodes, maxPerNode, maxEDSPerNode int) (streams, nodes int, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.streams[k]
	n := t.nodes[id]
	streams, nodes, limit := n.ads, len(t.nodes), maxPerNode
	if s != nil && s.eds {
		streams, limit = n.eds, maxEDSPerNode
	}
	known := n.ads+n.eds > 0
	if streams >= limit || (!known && nodes >= maxNodes) {
		return streams, nodes, false
	}
	if s != nil && s.nodeID == "" {
		s.nodeID, s.cluster = id, cluster
		if s.eds {
			n.eds++
		} else {
			n.ads++
		}
		t.nodes[id] = n
	}
	return streams, nodes, true
}

// isEDS reports whether stream k is a non-ADS EDS stream.
func (t *tracker) isEDS(k streamKey) bool {
	t.mu.RLock()
	defer t.mu.RUnlock()
	s := t.streams[k]
	return s != nil && s.eds
}

// counts returns the number of open ADS and non-ADS EDS streams.
func (t *tracker) counts() (ads, eds int) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return len(t.streams) - t.edsStreams, t.edsStreams
}

// stalledStream is a stream excludeStalled closes.
type stalledStream struct {
	key       streamKey
	node      string
	noRequest bool          // no first request at all
	pending   int           // responses not ACKed or NACKed
	oldest    time.Duration // age of the oldest of them
	close     context.CancelCauseFunc
}

// maxUnansweredFactor bounds, in ack allowances, how long one response
// may stay unanswered while the stream answers others: 10 × the 30 s
// default (plus the response's per-resource allowance) is over 5 minutes,
// above Envoy's initial sync at 100,000 revisions (41–125 s measured, CDS
// ACKed last).
const maxUnansweredFactor = 10

// ackAllowancePerResource is added to the ack timeout for every resource
// (or removal) in the responses a stream has not answered: Envoy answers
// a response only once it has applied all of it on its main thread, which
// answers nothing else meanwhile, and responses queue behind each other.
// Envoy 1.40 spent ~0.35 ms of CPU per cluster applying 10,000 (bench
// scenario scale) and went quiet for over 30 s on the 100,000 of the
// initial sync when the machine was loaded, so a flat 30 s closed healthy
// streams in the middle of it. 1 ms per resource gives that sync 130 s.
const ackAllowancePerResource = time.Millisecond

// stalled marks as excluded, and returns, every stream that has left a
// response unanswered, and answered nothing, for its allowance (the
// timeout plus ackAllowancePerResource for each resource of its
// unanswered responses), or left one unanswered for maxUnansweredFactor ×
// that whatever else it answered, or has sent no request for timeout
// since it opened. A stream is returned once.
func (t *tracker) stalled(now time.Time, timeout time.Duration) []stalledStream {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []stalledStream
	for _, s := range t.streams {
		if s.excluded {
			continue
		}
		st := stalledStream{key: s.key, node: s.nodeID, pending: len(s.sent), close: s.close}
		switch {
		case s.nodeID == "" && now.Sub(s.connectedAt) >= timeout:
			st.noRequest, st.oldest = true, now.Sub(s.connectedAt)
		case len(s.sent) > 0:
			var oldest time.Time
			allow := timeout
			for _, r := range s.sent {
				if oldest.IsZero() || r.sentAt.Before(oldest) {
					oldest = r.sentAt
				}
				allow += time.Duration(len(r.names)+len(r.removed)) * ackAllowancePerResource
			}
			// Stalled: silent for the allowance since the oldest unanswered
			// response; or that response unanswered for the hard bound, so
			// a client that answers everything but one response cannot hold
			// that revision's confirmation forever.
			age := now.Sub(oldest)
			if age < allow || (now.Sub(s.answeredAt) < allow && age < maxUnansweredFactor*allow) {
				continue
			}
			st.oldest = age
		default:
			continue
		}
		s.excluded = true
		out = append(out, st)
	}
	return out
}

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
