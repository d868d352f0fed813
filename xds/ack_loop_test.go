package xds

import (
	"strconv"
	"testing"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
)

// scriptedPeer is an ackPeer whose server processes the client's ACKs
// late, in order, one at each change the client looks at, and whose
// changed always hands out a channel already closed (a change other than
// the client's own ACK: an earlier ACK, an apply). The scripted responses
// are all on their way; no response arrives after them.
type scriptedPeer struct {
	resps     chan recvResult
	queued    []string        // ACKed nonces the server has not processed
	processed map[string]bool // nonces whose ACK the server processed
	// later counts changes after every ACK was processed and before the
	// apply that makes the condition hold is recorded.
	later int
}

func newScriptedPeer(later int, nonces ...int) *scriptedPeer {
	p := &scriptedPeer{resps: make(chan recvResult, len(nonces)), processed: map[string]bool{}, later: later}
	for _, n := range nonces {
		p.resps <- recvResult{resp: &discoveryv3.DeltaDiscoveryResponse{TypeUrl: resourcev3.EndpointType, Nonce: strconv.Itoa(n)}}
	}
	return p
}

func (p *scriptedPeer) arrival() <-chan recvResult { return p.resps }
func (p *scriptedPeer) took()                      {}

func (p *scriptedPeer) ack(r *discoveryv3.DeltaDiscoveryResponse) {
	p.queued = append(p.queued, r.GetNonce())
}

func (p *scriptedPeer) changed() <-chan struct{} {
	switch {
	case len(p.queued) > 0:
		p.processed[p.queued[0]] = true
		p.queued = p.queued[1:]
	case p.later > 0 && len(p.resps) == 0:
		p.later--
	}
	ch := make(chan struct{})
	close(ch)
	return ch
}

// TestAckLoopWaitsForOwnACK (regression of TestWakeAfterStallRestart's
// flake, "no response within 20s"): Envoy is sent an assignment twice
// (nonces 6 and 7, the second after an EDS re-subscribe) and ACKs both;
// the wake is confirmed once the server processed the ACK of nonce 7 and,
// in the second case, recorded the apply after it. Server.Changed wakes
// on any change, so a loop that took each wake-up for its own ACK checked
// the condition before the ACK of 7 (or the apply) was processed and then
// waited for a response that never comes. ackLoop waits for whichever
// comes first, a response or a change, and returns.
func TestAckLoopWaitsForOwnACK(t *testing.T) {
	for _, later := range []int{0, 2} {
		t.Run("later="+strconv.Itoa(later), func(t *testing.T) {
			p := newScriptedPeer(later, 6, 7)
			ackLoop(t, p, "the second wake confirmed", func() bool { return p.processed["7"] && p.later == 0 })
			if n := len(p.resps); n != 0 {
				t.Errorf("%d responses left unreceived", n)
			}
		})
	}
}
