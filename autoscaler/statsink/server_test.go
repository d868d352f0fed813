package statsink

import (
	"testing"
	"time"

	metricsv3 "github.com/envoyproxy/go-control-plane/envoy/service/metrics/v3"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/thaw-dev/thaw/autoscaler"
	"github.com/thaw-dev/thaw/revision"
)

var (
	demo  = revision.Key{Namespace: "default", Name: "demo"}
	other = revision.Key{Namespace: "team-a", Name: "web.v2"}
)

var (
	demoCluster  = revision.ClusterName(demo)
	otherCluster = revision.ClusterName(other)
)

// step is one action of a scenario: send a message on a stream, close a
// stream, or advance the clock until node expiry; then the samples recorded
// by the action must equal want.
type step struct {
	stream  int // client stream index; a stream opens at first use
	msg     *metricsv3.StreamMetricsMessage
	close   bool
	advance time.Duration // step the fake clock once the expiry timer is set
	nodes   int           // with advance: known nodes afterwards
	want    []autoscaler.Sample
}

func sample(node string, key revision.Key, sec int, conc, req float64) autoscaler.Sample {
	return autoscaler.Sample{Revision: key, Source: node, Time: at(sec), Concurrency: conc, Requests: req}
}

func TestStreamScenarios(t *testing.T) {
	a, b := nodeName(1), nodeName(2)
	tests := []struct {
		name       string
		steps      []step
		wantResets float64
	}{{
		name: "several nodes, deltas per node, other clusters and families ignored",
		steps: []step{
			{stream: 0, msg: envoyMsg(a, ts(1),
				counter("upstream_rq_total", demoCluster, 100), counter("upstream_rq_total", "thaw_xds", 7),
				counter("upstream_cx_total", demoCluster, 9), gauge("upstream_rq_active", demoCluster, 3),
				gauge("upstream_rq_pending_active", demoCluster, 1), gauge("upstream_rq_active", "thaw_xds", 1)),
				want: []autoscaler.Sample{sample(a, demo, 1, 4, 0)}},
			{stream: 1, msg: envoyMsg(b, ts(1), counter("upstream_rq_total", demoCluster, 50),
				gauge("upstream_rq_active", demoCluster, 2)),
				want: []autoscaler.Sample{sample(b, demo, 1, 2, 0)}},
			{stream: 0, msg: envoyMsg("", ts(2), counter("upstream_rq_total", demoCluster, 110),
				gauge("upstream_rq_active", demoCluster, 5), gauge("upstream_rq_pending_active", demoCluster, 0)),
				want: []autoscaler.Sample{sample(a, demo, 2, 5, 10)}},
			{stream: 1, msg: envoyMsg("", ts(2), counter("upstream_rq_total", demoCluster, 53),
				gauge("upstream_rq_active", demoCluster, 1)),
				want: []autoscaler.Sample{sample(b, demo, 2, 1, 3)}},
		},
	}, {
		name: "counter reset takes a fresh base",
		steps: []step{
			{msg: envoyMsg(a, ts(1), counter("upstream_rq_total", demoCluster, 100)),
				want: []autoscaler.Sample{sample(a, demo, 1, 0, 0)}},
			{msg: envoyMsg("", ts(2), counter("upstream_rq_total", demoCluster, 120)),
				want: []autoscaler.Sample{sample(a, demo, 2, 0, 20)}},
			{msg: envoyMsg("", ts(3), counter("upstream_rq_total", demoCluster, 5)),
				want: []autoscaler.Sample{sample(a, demo, 3, 0, 0)}},
			{msg: envoyMsg("", ts(4), counter("upstream_rq_total", demoCluster, 8)),
				want: []autoscaler.Sample{sample(a, demo, 4, 0, 3)}},
		},
		wantResets: 1,
	}, {
		name: "a cluster appearing after the first flush counts in full",
		steps: []step{
			{msg: envoyMsg(a, ts(1), counter("upstream_rq_total", demoCluster, 100)),
				want: []autoscaler.Sample{sample(a, demo, 1, 0, 0)}},
			{msg: envoyMsg("", ts(2), counter("upstream_rq_total", demoCluster, 100),
				counter("upstream_rq_total", otherCluster, 7), gauge("upstream_rq_active", otherCluster, 2)),
				want: []autoscaler.Sample{sample(a, demo, 2, 0, 0), sample(a, other, 2, 2, 7)}},
		},
	}, {
		name: "a revision missing from a whole flush gets one zero sample",
		steps: []step{
			{msg: envoyMsg(a, ts(1), gauge("upstream_rq_active", demoCluster, 3), gauge("upstream_rq_active", otherCluster, 2)),
				want: []autoscaler.Sample{sample(a, demo, 1, 3, 0), sample(a, other, 1, 2, 0)}},
			{msg: envoyMsg("", ts(2), gauge("upstream_rq_active", demoCluster, 3)),
				want: []autoscaler.Sample{sample(a, demo, 2, 3, 0)}},
			// The zero comes when the next flush starts: with batch_size set a
			// flush spans several messages, so only a new flush proves absence.
			{msg: envoyMsg("", ts(3), gauge("upstream_rq_active", demoCluster, 4)),
				want: []autoscaler.Sample{sample(a, demo, 3, 4, 0), sample(a, other, 3, 0, 0)}},
			{msg: envoyMsg("", ts(4), gauge("upstream_rq_active", demoCluster, 4)),
				want: []autoscaler.Sample{sample(a, demo, 4, 4, 0)}},
		},
	}, {
		name: "batched flush: messages with one timestamp form one flush",
		steps: []step{
			{msg: envoyMsg(a, ts(1), gauge("upstream_rq_active", demoCluster, 3)),
				want: []autoscaler.Sample{sample(a, demo, 1, 3, 0)}},
			{msg: envoyMsg("", ts(1), gauge("upstream_rq_active", otherCluster, 2)),
				want: []autoscaler.Sample{sample(a, other, 1, 2, 0)}},
			{msg: envoyMsg("", ts(2), gauge("upstream_rq_active", demoCluster, 1)),
				want: []autoscaler.Sample{sample(a, demo, 2, 1, 0)}},
			{msg: envoyMsg("", ts(2), gauge("upstream_rq_active", otherCluster, 1)),
				want: []autoscaler.Sample{sample(a, other, 2, 1, 0)}},
		},
	}, {
		name: "reconnect within the expiry continues the counters",
		steps: []step{
			{msg: envoyMsg(a, ts(1), counter("upstream_rq_total", demoCluster, 100)),
				want: []autoscaler.Sample{sample(a, demo, 1, 0, 0)}},
			{close: true},
			{stream: 1, msg: envoyMsg(a, ts(3), counter("upstream_rq_total", demoCluster, 130)),
				want: []autoscaler.Sample{sample(a, demo, 3, 0, 30)}},
		},
	}, {
		name: "expiry zeroes the node's revisions; a later stream starts afresh",
		steps: []step{
			{msg: envoyMsg(a, ts(1), counter("upstream_rq_total", demoCluster, 100), gauge("upstream_rq_active", demoCluster, 3)),
				want: []autoscaler.Sample{sample(a, demo, 1, 3, 0)}},
			{stream: 1, msg: envoyMsg(b, ts(1), gauge("upstream_rq_active", demoCluster, 2)),
				want: []autoscaler.Sample{sample(b, demo, 1, 2, 0)}},
			{close: true},
			{advance: 10 * time.Second, nodes: 1,
				want: []autoscaler.Sample{sample(a, demo, 10, 0, 0)}},
			{stream: 2, msg: envoyMsg(a, ts(12), counter("upstream_rq_total", demoCluster, 130), gauge("upstream_rq_active", demoCluster, 1)),
				want: []autoscaler.Sample{sample(a, demo, 12, 1, 0)}},
		},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env := startSink(t)
			streams := map[int]metricsStream{}
			for i, s := range tc.steps {
				switch {
				case s.msg != nil:
					st, ok := streams[s.stream]
					if !ok {
						st = env.open(t)
						streams[s.stream] = st
					}
					env.send(t, st, s.msg)
				case s.close:
					if _, err := streams[s.stream].CloseAndRecv(); err != nil {
						t.Fatalf("step %d: close: %v", i, err)
					}
					delete(streams, s.stream)
				case s.advance > 0:
					waitFor(t, "expiry timer", env.clock.HasWaiters)
					env.clock.Step(s.advance)
					waitFor(t, "node expiry", func() bool { return testutil.ToFloat64(env.sink.m.nodes) == float64(s.nodes) })
				}
				checkSamples(t, "step "+string(rune('0'+i)), env.rec.take(), s.want)
			}
			if got := testutil.ToFloat64(env.sink.m.counterResets); got != tc.wantResets {
				t.Errorf("counter resets = %v, want %v", got, tc.wantResets)
			}
		})
	}
}
