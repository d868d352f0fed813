package ack

import (
	"context"
	"time"
)

// streamState is what one stream has been sent and has acknowledged.
type streamState struct {
	key     StreamKey
	nodeID  string
	cluster string
	// eds: a non-ADS EndpointDiscoveryService stream (one per EDS cluster
	// whose config source is thaw_xds, e.g. Envoy Gateway's Envoy); it
	// carries only ClusterLoadAssignments and has its own limits.
	eds         bool
	connectedAt time.Time
	// sent maps a response nonce to what it carried, until ACK or NACK.
	sent map[string]*Response
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
	// counts for confirmation (Stalled).
	excluded bool
	// answeredAt is when the stream last ACKed or NACKed a response: a
	// stream that answers is not stalled, even while one response waits
	// (Envoy ACKs a CDS response only once every cluster has warmed, which
	// takes minutes at 100,000 revisions while EDS answers keep coming).
	answeredAt time.Time
}

// settle removes a response from the pending set and returns it, or nil
// for an unknown nonce (already settled, or from before a reconnect).
func (s *streamState) settle(nonce string) *Response {
	r := s.sent[nonce]
	if r == nil {
		return nil
	}
	delete(s.sent, nonce)
	p := s.pending[r.TypeURL]
	dec := func(n string) {
		if p[n] <= 1 {
			delete(p, n)
		} else {
			p[n]--
		}
	}
	for _, n := range r.Names {
		dec(n)
	}
	for _, n := range r.Removed {
		dec(n)
	}
	return r
}

// clearNACKs drops names that were just ACKed from earlier NACKs.
func (s *streamState) clearNACKs(r *Response) {
	list := s.nacks[r.TypeURL]
	if len(list) == 0 {
		return
	}
	done := make(map[string]bool, len(r.Names)+len(r.Removed))
	for _, n := range r.Names {
		done[n] = true
	}
	for _, n := range r.Removed {
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
	s.nacks[r.TypeURL] = kept
}
