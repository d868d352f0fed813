package xds

import (
	"errors"
	"io"
	"testing"
	"time"

	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/zap/zaptest"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/thaw-dev/thaw/revision"
	"github.com/thaw-dev/thaw/xds/ack"
)

// streamEnd waits (bounded) until the client's stream ends and returns its
// error: nil only if the stream never ended within waitLimit.
func streamEnd(t *testing.T, c *deltaClient) error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		for {
			if _, err := c.stream.Recv(); err != nil {
				done <- err
				return
			}
		}
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(waitLimit):
		return nil
	}
}

// stepUntil advances clk by step until cond holds, at most 400 steps, and
// fails otherwise. The stall check re-arms its timer after each run, so
// every step waits (bounded) for a waiter first.
func stepUntil(t *testing.T, clk *clocktesting.FakeClock, step time.Duration, what string, cond func() bool) {
	t.Helper()
	for range 400 {
		if cond() {
			return
		}
		waitFor(t, "the stall check timer", clk.HasWaiters)
		clk.Step(step)
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("%s: not reached after 400 clock steps", what)
}

// TestStalledNodeIsExcluded: a real delta ADS client that subscribes to a
// revision's endpoints and never ACKs blocks confirmation only until the
// ack timeout; then thaw closes its stream, counts and reports it, and
// confirmation proceeds with the healthy node. On reconnect the node
// counts again and must ACK the current state.
func TestStalledNodeIsExcluded(t *testing.T) {
	const ackTimeout = 30 * time.Second
	clk := clocktesting.NewFakeClock(time.Now())
	events := make(chan string, 8)
	f := startFixtureOpts(t, ServerOptions{Logger: zaptest.NewLogger(t), Config: componentConfig(), Clock: clk,
		Limits: Limits{AckTimeout: ackTimeout}, OnExcluded: func(node, reason string) { events <- node }}, 0)
	f.upsert(keyA, revision.ModeServe, []string{"a.example.com"}, ready("10.0.0.1", 80))
	f.reg.SetSynced()
	good := dialDelta(t, f.addr, "envoy-good")
	syncAll(t, good)

	stalled := dialDelta(t, f.addr, "envoy-stalled")
	stalled.subscribe(resourcev3.ClusterType)
	stalled.ack(stalled.recvType(resourcev3.ClusterType))
	stalled.subscribe(resourcev3.EndpointType, revision.ClusterName(keyA))
	stalled.recvType(resourcev3.EndpointType) // never ACKed

	f.reg.SetMode(keyA, revision.ModeProxy)
	gen := generation(f, keyA)
	good.ack(good.recvType(resourcev3.EndpointType))
	waitFor(t, "the flip applied", func() bool { return f.srv.Status(keyA).Generation >= gen })
	if f.srv.ConfirmedEverywhere(keyA, gen) {
		t.Fatal("confirmed while envoy-stalled has not ACKed its endpoints")
	}

	stepUntil(t, clk, ackTimeout/4, "confirmation without the stalled node",
		func() bool { return f.srv.ConfirmedEverywhere(keyA, gen) })
	if got := testutil.ToFloat64(f.srv.limMetrics.closed.WithLabelValues(closedAckTimeout)); got != 1 {
		t.Errorf("thaw_xds_streams_closed_total{reason=ack_timeout} = %v, want 1", got)
	}
	if ex := f.srv.Excluded(); len(ex) != 1 || ex[0].ID != "envoy-stalled" || ex[0].Reason != closedAckTimeout || ex[0].Pending == 0 {
		t.Errorf("Excluded() = %+v, want envoy-stalled with pending responses", ex)
	}
	if len(events) != 1 || <-events != "envoy-stalled" {
		t.Error("OnExcluded was not called once for envoy-stalled")
	}
	if err := streamEnd(t, stalled); err == nil {
		t.Fatal("the stalled stream was not closed by thaw")
	}
	waitFor(t, "the stalled stream to be forgotten", func() bool { return len(f.srv.Nodes()) == 1 })

	// The healthy node keeps working meanwhile: a flip back is sent and
	// confirmed.
	f.reg.SetMode(keyA, revision.ModeServe)
	gen2 := generation(f, keyA)
	good.ack(good.recvType(resourcev3.EndpointType))
	waitFor(t, "the healthy node to confirm serve mode", func() bool { return f.srv.ConfirmedEverywhere(keyA, gen2) })

	// Reconnected, the node gets the current assignment and counts again
	// until it ACKs.
	back := dialDelta(t, f.addr, "envoy-stalled")
	back.subscribe(resourcev3.ClusterType)
	back.ack(back.recvType(resourcev3.ClusterType))
	back.subscribe(resourcev3.EndpointType, revision.ClusterName(keyA))
	eds := back.recvType(resourcev3.EndpointType)
	if isProxy(cla(t, eds.GetResources()[0])) {
		t.Fatal("the reconnected node was sent the old proxy-mode assignment")
	}
	if f.srv.ConfirmedEverywhere(keyA, gen2) {
		t.Fatal("confirmed while the reconnected node has not ACKed")
	}
	back.ack(eds)
	waitFor(t, "the reconnected node's ACK to confirm", func() bool { return f.srv.ConfirmedEverywhere(keyA, gen2) })
}

// warmingStream starts a server with ackTimeout and one serve-mode
// revision, and a delta stream of node that leaves its CDS response
// unanswered (as Envoy does while its clusters warm) and has ACKed the
// revision's ClusterLoadAssignment.
func warmingStream(t *testing.T, ackTimeout time.Duration, node string) (*fixture, *clocktesting.FakeClock, *deltaClient) {
	t.Helper()
	clk := clocktesting.NewFakeClock(time.Now())
	f := startFixtureOpts(t, ServerOptions{Logger: zaptest.NewLogger(t), Config: componentConfig(), Clock: clk,
		Limits: Limits{AckTimeout: ackTimeout}}, 0)
	f.upsert(keyA, revision.ModeServe, []string{"a.example.com"}, ready("10.0.0.1", 80))
	f.reg.SetSynced()
	c := dialDelta(t, f.addr, node)
	c.subscribe(resourcev3.ClusterType)
	c.recvType(resourcev3.ClusterType) // never ACKed
	c.subscribe(resourcev3.EndpointType, revision.ClusterName(keyA))
	c.ack(c.recvType(resourcev3.EndpointType))
	return f, clk, c
}

// TestAnsweringStreamIsNotStalled: a stream that leaves its CDS response
// unanswered (as Envoy does until every cluster has warmed, minutes at
// 100,000 revisions) but keeps ACKing its endpoint updates is not closed,
// however long that takes; once it stops answering anything, it is.
func TestAnsweringStreamIsNotStalled(t *testing.T) {
	const ackTimeout = 10 * time.Second
	f, clk, c := warmingStream(t, ackTimeout, "envoy-warming")

	// Three ack timeouts pass; every quarter of one, a flip is sent and
	// ACKed.
	for i := range 12 {
		f.reg.SetMode(keyA, revision.Mode(i%2))
		c.ack(c.recvType(resourcev3.EndpointType))
		waitFor(t, "the stall check timer", clk.HasWaiters)
		clk.Step(ackTimeout / 4)
		time.Sleep(5 * time.Millisecond)
	}
	if ex := f.srv.Excluded(); len(ex) != 0 {
		t.Fatalf("Excluded() = %+v: a stream that keeps answering was closed", ex)
	}
	// Silence: one more flip left unanswered.
	f.reg.SetMode(keyA, revision.ModeProxy)
	c.recvType(resourcev3.EndpointType)
	stepUntil(t, clk, ackTimeout/4, "the silent stream excluded", func() bool { return len(f.srv.Excluded()) == 1 })
	if ex := f.srv.Excluded(); ex[0].ID != "envoy-warming" || ex[0].Reason != closedAckTimeout {
		t.Errorf("Excluded() = %+v, want envoy-warming for ack_timeout", ex)
	}
}

// TestUnansweredResponseHasAHardBound: a stream that answers every
// endpoint update but never its CDS response is closed once that response
// is ack.MaxUnansweredFactor ack timeouts old.
func TestUnansweredResponseHasAHardBound(t *testing.T) {
	const ackTimeout = 10 * time.Second
	f, clk, c := warmingStream(t, ackTimeout, "envoy-one-unanswered")
	steps := 0
	for i := 0; len(f.srv.Excluded()) == 0; i++ {
		if i == 4*ack.MaxUnansweredFactor+8 {
			t.Fatalf("not excluded after %d quarter timeouts of answering all but one response", i)
		}
		f.reg.SetMode(keyA, revision.Mode(i%2))
		c.ack(c.recvType(resourcev3.EndpointType))
		waitFor(t, "the stall check timer", clk.HasWaiters)
		clk.Step(ackTimeout / 4)
		waitFor(t, "the stall check to run", clk.HasWaiters) // it re-arms its timer after checking
		steps++
	}
	if steps < 4*ack.MaxUnansweredFactor-1 {
		t.Errorf("excluded after %d quarter timeouts, before the hard bound (%d)", steps, 4*ack.MaxUnansweredFactor)
	}
}

// TestSilentStreamIsClosed: a stream that never sends a request is closed
// after the ack timeout and never counts.
func TestSilentStreamIsClosed(t *testing.T) {
	const ackTimeout = 10 * time.Second
	clk := clocktesting.NewFakeClock(time.Now())
	f := startFixtureOpts(t, ServerOptions{Logger: zaptest.NewLogger(t), Config: componentConfig(), Clock: clk,
		Limits: Limits{AckTimeout: ackTimeout}}, 0)
	f.upsert(keyA, revision.ModeProxy, []string{"a.example.com"})
	f.reg.SetSynced()
	silent := dialDelta(t, f.addr, "never-sends") // opens the stream, sends nothing
	waitFor(t, "the silent stream to open", func() bool { return len(f.srv.Nodes()) == 1 })
	good := dialDelta(t, f.addr, "envoy-good")
	syncAll(t, good)
	if !f.srv.ConfirmedEverywhere(keyA, generation(f, keyA)) {
		t.Fatal("a silent stream held confirmation back")
	}
	closed := f.srv.limMetrics.closed.WithLabelValues(closedNoRequest)
	stepUntil(t, clk, ackTimeout/4, "the silent stream closed", func() bool { return testutil.ToFloat64(closed) == 1 })
	if err := streamEnd(t, silent); err == nil {
		t.Fatal("the silent stream was not closed")
	}
	if got := testutil.ToFloat64(f.srv.limMetrics.closed.WithLabelValues(closedAckTimeout)); got != 0 {
		t.Errorf("the healthy node was closed too (ack_timeout = %v)", got)
	}
}

// TestNodeAndStreamLimits: node ids beyond MaxNodes and streams beyond
// MaxStreamsPerNode are refused with ResourceExhausted and counted; the
// admitted node keeps receiving updates.
func TestNodeAndStreamLimits(t *testing.T) {
	f := startFixtureOpts(t, ServerOptions{Logger: zaptest.NewLogger(t), Config: componentConfig(),
		Limits: Limits{MaxNodes: 2, MaxStreamsPerNode: 2}}, 0)
	f.upsert(keyA, revision.ModeServe, []string{"a.example.com"}, ready("10.0.0.1", 80))
	f.reg.SetSynced()
	one := dialDelta(t, f.addr, "envoy-1")
	syncAll(t, one)
	two := dialDelta(t, f.addr, "envoy-2")
	syncAll(t, two)

	third := dialDelta(t, f.addr, "envoy-3")
	third.subscribe(resourcev3.ClusterType)
	if err := streamEnd(t, third); status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("third node: stream ended with %v, want ResourceExhausted", err)
	}
	// A second stream of envoy-1 (a reconnect overlapping the old stream)
	// is admitted; a third is not.
	overlap := dialDelta(t, f.addr, "envoy-1")
	overlap.subscribe(resourcev3.ClusterType)
	overlap.recvType(resourcev3.ClusterType)
	dup := dialDelta(t, f.addr, "envoy-1")
	dup.subscribe(resourcev3.ClusterType)
	if err := streamEnd(t, dup); status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("third stream of envoy-1: ended with %v, want ResourceExhausted", err)
	}
	for reason, want := range map[string]float64{refusedTooManyNodes: 1, refusedNodeStreams: 1, refusedTooManyStreams: 0} {
		if got := testutil.ToFloat64(f.srv.limMetrics.refused.WithLabelValues(reason)); got != want {
			t.Errorf("thaw_xds_streams_refused_total{reason=%s} = %v, want %v", reason, got, want)
		}
	}
	f.reg.SetMode(keyA, revision.ModeProxy)
	gen := generation(f, keyA)
	one.ack(one.recvType(resourcev3.EndpointType))
	two.ack(two.recvType(resourcev3.EndpointType))
	waitFor(t, "confirmation by the admitted nodes", func() bool { return f.srv.ConfirmedEverywhere(keyA, gen) })

	// A refused node id is admitted once a slot frees.
	two.cancel()
	waitFor(t, "envoy-2 gone", func() bool { return len(f.srv.Nodes()) == 2 })
	again := dialDelta(t, f.addr, "envoy-3")
	syncAll(t, again)
}

// TestTotalStreamLimit: streams that never name a node are bounded by
// MaxNodes*MaxStreamsPerNode.
func TestTotalStreamLimit(t *testing.T) {
	f := startFixtureOpts(t, ServerOptions{Logger: zaptest.NewLogger(t), Config: componentConfig(),
		Limits: Limits{MaxNodes: 1, MaxStreamsPerNode: 2}}, 0)
	f.upsert(keyA, revision.ModeServe, []string{"a.example.com"}, ready("10.0.0.1", 80))
	f.reg.SetSynced()
	dialDelta(t, f.addr, "anon-1")
	dialDelta(t, f.addr, "anon-2")
	waitFor(t, "two open streams", func() bool { return len(f.srv.Nodes()) == 2 })
	over := dialDelta(t, f.addr, "anon-3")
	err := streamEnd(t, over)
	if status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("third anonymous stream ended with %v, want ResourceExhausted", err)
	}
	if errors.Is(err, io.EOF) {
		t.Fatal("stream ended cleanly")
	}
}
