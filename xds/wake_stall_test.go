package xds

import (
	"testing"
	"time"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"go.uber.org/zap/zaptest"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/thaw-dev/thaw/revision"
	"github.com/thaw-dev/thaw/xds/translate"
)

// versionsOf returns the name → version pairs a response carried.
func versionsOf(r *discoveryv3.DeltaDiscoveryResponse) map[string]string {
	out := map[string]string{}
	for _, res := range r.GetResources() {
		out[res.GetName()] = res.GetVersion()
	}
	return out
}

// ackUntil plays Envoy after a subscription: it ACKs every response c
// receives until cond holds, at most 8 responses, and fails otherwise.
// Envoy ACKs every response, including a repeat of one it already holds.
func ackUntil(t *testing.T, srv *Server, c *deltaClient, what string, cond func() bool) {
	t.Helper()
	ackLoop(t, serverPeer{c, srv}, what, cond)
}

// ackPeer is what ackLoop drives: a client's stream (deltaClient) and the
// server's changes.
type ackPeer interface {
	arrival() <-chan recvResult
	took()
	ack(r *discoveryv3.DeltaDiscoveryResponse)
	// changed returns a channel closed at the server's next change (of
	// any kind: an ACK, an apply, a stream closed).
	changed() <-chan struct{}
}

// serverPeer is ackPeer for a deltaClient of a running Server.
type serverPeer struct {
	*deltaClient
	srv *Server
}

func (p serverPeer) changed() <-chan struct{} { return p.srv.Changed() }

// ackLoop checks cond at every event that can change it, and only then:
// a response arriving (it is ACKed) or a change of the server (an ACK
// processed, an apply recorded). It never waits on one of them alone. A
// loop that, after each ACK, waited for one server change and then for
// the next response fell behind when the change was another's (an ACK the
// caller sent without waiting, an apply), and blocked in recv after the
// last response while the ACK or the apply that makes cond hold was still
// to come: the flake of TestWakeAfterStallRestart. Bounded: 8 responses,
// 1,000 events.
func ackLoop(t *testing.T, p ackPeer, what string, cond func() bool) {
	t.Helper()
	responses := 0
	for range 1000 {
		ch := p.changed()
		if cond() {
			return
		}
		select {
		case res := <-p.arrival():
			p.took()
			if res.err != nil {
				t.Fatalf("%s: recv: %v", what, res.err)
			}
			if responses == 8 {
				t.Fatalf("%s: not after %d responses", what, responses)
			}
			responses++
			p.ack(res.resp)
		case <-ch:
		case <-time.After(waitLimit):
			t.Fatalf("%s: no response and no change within %s (%d responses ACKed)", what, waitLimit, responses)
		}
	}
	t.Fatalf("%s: not after 1000 responses and changes", what)
}

// TestWakeAfterStallRestart (issue 28/31, a wake held for its hold
// timeout after thaw closed Envoy's xDS stream as stalled): with the
// module's cluster routes, a revision wakes while its Envoy's stream is
// stalled (the cluster is sent, never ACKed); thaw closes the stream;
// Envoy reconnects with the versions it holds (with or without the
// unacknowledged cluster applied) and ACKs the new stream's responses.
// The backend must be confirmed for that node (ConfirmedBy, what modsvc
// sends the module by), and again after a return to zero and a second
// wake on the new stream. noStall is the same without the restart.
func TestWakeAfterStallRestart(t *testing.T) {
	for _, mode := range []string{"noStall", "notApplied", "applied"} {
		t.Run(mode, func(t *testing.T) {
			const ackTimeout = 30 * time.Second
			cfg := componentConfig()
			cfg.IdleHoldPath = true
			cfg.Module = &translate.ModuleConfig{Path: "/opt/thaw/thaw-activator.so", StateURL: "http://127.0.0.1:9901/activator/v1/state",
				ReportURL: "http://127.0.0.1:9901/activator/v1/report", Node: "envoy-1"}
			clk := clocktesting.NewFakeClock(time.Now())
			f := startFixtureOpts(t, ServerOptions{Logger: zaptest.NewLogger(t), Config: cfg, Clock: clk,
				Limits: Limits{AckTimeout: ackTimeout}}, 0)
			f.upsert(keyA, revision.ModeProxy, []string{"a.example.com"})
			f.reg.SetSynced()
			c := dialDelta(t, f.addr, "envoy-1")
			c.subscribe(resourcev3.ClusterType)
			cds0 := c.recvType(resourcev3.ClusterType)
			c.ack(cds0)
			syncListeners(c)
			held := versionsOf(cds0)

			f.reg.SetBackends(keyA, []revision.Backend{ready("10.0.0.1", 80)})
			gen := generation(f, keyA)
			confirmed := func() bool { return f.srv.ConfirmedBy("envoy-1", keyA, gen) }
			cds := c.recvType(resourcev3.ClusterType)
			b := c
			if mode == "noStall" {
				c.ack(cds)
				c.subscribe(resourcev3.EndpointType, "rev_default_a")
			} else {
				// The stream stalls: the cluster is never ACKed.
				if mode == "applied" {
					for n, v := range versionsOf(cds) {
						held[n] = v
					}
				}
				stepUntil(t, clk, ackTimeout/4, "the stalled stream excluded", func() bool { return len(f.srv.Excluded()) == 1 })
				if err := streamEnd(t, c); err == nil {
					t.Fatal("the stalled stream was not closed")
				}
				b = dialDelta(t, f.addr, "envoy-1")
				b.send(&discoveryv3.DeltaDiscoveryRequest{TypeUrl: resourcev3.ClusterType, InitialResourceVersions: held})
				b.ack(b.recvType(resourcev3.ClusterType))
				b.subscribe(resourcev3.EndpointType, "rev_default_a")
			}
			ackUntil(t, f.srv, b, "the wake confirmed", confirmed)

			// Back to zero and awake again on the (new) stream.
			f.reg.SetBackends(keyA, nil)
			ackUntil(t, f.srv, b, "the return to zero ACKed", func() bool {
				return !f.srv.tracker.HeldAnywhere(resourcev3.ClusterType, "rev_default_a") &&
					!f.srv.tracker.HeldAnywhere(resourcev3.EndpointType, "rev_default_a")
			})
			b.send(&discoveryv3.DeltaDiscoveryRequest{TypeUrl: resourcev3.EndpointType, ResourceNamesUnsubscribe: []string{"rev_default_a"}})
			f.reg.SetBackends(keyA, []revision.Backend{ready("10.0.0.1", 80)})
			gen = generation(f, keyA)
			b.ack(b.recvType(resourcev3.ClusterType))
			b.subscribe(resourcev3.EndpointType, "rev_default_a")
			ackUntil(t, f.srv, b, "the second wake confirmed", confirmed)
		})
	}
}
