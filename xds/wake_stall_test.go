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
// Each ACK is awaited (srv.Changed) before cond is checked again.
func ackUntil(t *testing.T, srv *Server, c *deltaClient, what string, cond func() bool) {
	t.Helper()
	for range 8 {
		if cond() {
			return
		}
		r := c.recv()
		ch := srv.Changed()
		c.ack(r)
		select {
		case <-ch:
		case <-time.After(waitLimit):
			t.Fatalf("%s: the ACK of %v was not processed", what, resourceNames(r))
		}
	}
	waitFor(t, what, cond)
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
