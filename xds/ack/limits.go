package ack

import (
	"context"
	"time"
)

// ClaimNode names the node of stream k unless that would exceed maxNodes
// distinct node ids, or maxPerNode ADS streams (maxEDSPerNode non-ADS EDS
// streams, for an EDS stream) of id. It returns the node's stream count of
// the stream's kind and the number of node ids before the claim, and
// whether the claim was made.
func (t *Tracker) ClaimNode(k StreamKey, id, cluster string, maxNodes, maxPerNode, maxEDSPerNode int) (streams, nodes int, ok bool) {
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

// IsEDS reports whether stream k is a non-ADS EDS stream.
func (t *Tracker) IsEDS(k StreamKey) bool {
	t.mu.RLock()
	defer t.mu.RUnlock()
	s := t.streams[k]
	return s != nil && s.eds
}

// Counts returns the number of open ADS and non-ADS EDS streams.
func (t *Tracker) Counts() (ads, eds int) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return len(t.streams) - t.edsStreams, t.edsStreams
}

// StalledStream is a stream excludeStalled closes.
type StalledStream struct {
	Key       StreamKey
	Node      string        // Envoy's node id, "" before its first request
	NoRequest bool          // no first request at all
	Pending   int           // responses not ACKed or NACKed
	Oldest    time.Duration // age of the oldest of them
	// Close ends the stream (nil when Open got none).
	Close context.CancelCauseFunc
}

// MaxUnansweredFactor bounds, in ack allowances, how long one response
// may stay unanswered while the stream answers others: 10 × the 30 s
// default (plus the response's per-resource allowance) is over 5 minutes,
// above Envoy's initial sync at 100,000 revisions (41–125 s measured, CDS
// ACKed last).
const MaxUnansweredFactor = 10

// ackAllowancePerResource is added to the ack timeout for every resource
// (or removal) in the responses a stream has not answered: Envoy answers
// a response only once it has applied all of it on its main thread, which
// answers nothing else meanwhile, and responses queue behind each other.
// Envoy 1.40 spent ~0.35 ms of CPU per cluster applying 10,000 (bench
// scenario scale) and went quiet for over 30 s on the 100,000 of the
// initial sync when the machine was loaded, so a flat 30 s closed healthy
// streams in the middle of it. 1 ms per resource gives that sync 130 s.
const ackAllowancePerResource = time.Millisecond

// Stalled marks as excluded, and returns, every stream that has left a
// response unanswered, and answered nothing, for its allowance (the
// timeout plus ackAllowancePerResource for each resource of its
// unanswered responses), or left one unanswered for MaxUnansweredFactor ×
// that whatever else it answered, or has sent no request for timeout
// since it opened. A stream is returned once.
func (t *Tracker) Stalled(now time.Time, timeout time.Duration) []StalledStream {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []StalledStream
	for _, s := range t.streams {
		if s.excluded {
			continue
		}
		st := StalledStream{Key: s.key, Node: s.nodeID, Pending: len(s.sent), Close: s.close}
		switch {
		case s.nodeID == "" && now.Sub(s.connectedAt) >= timeout:
			st.NoRequest, st.Oldest = true, now.Sub(s.connectedAt)
		case len(s.sent) > 0:
			var oldest time.Time
			allow := timeout
			for _, r := range s.sent {
				if oldest.IsZero() || r.SentAt.Before(oldest) {
					oldest = r.SentAt
				}
				allow += time.Duration(len(r.Names)+len(r.Removed)) * ackAllowancePerResource
			}
			// Stalled: silent for the allowance since the oldest unanswered
			// response; or that response unanswered for the hard bound, so
			// a client that answers everything but one response cannot hold
			// that revision's confirmation forever.
			age := now.Sub(oldest)
			if age < allow || (now.Sub(s.answeredAt) < allow && age < MaxUnansweredFactor*allow) {
				continue
			}
			st.Oldest = age
		default:
			continue
		}
		s.excluded = true
		out = append(out, st)
	}
	return out
}
