package statsink

import (
	"testing"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/thaw-dev/thaw/autoscaler"
	"github.com/thaw-dev/thaw/revision"
)

// TestOrderChanges: the sink guesses each metric's cluster from its
// position in the previous messages (node.order); flushes that reorder,
// insert and drop clusters must still give every revision its own values.
func TestOrderChanges(t *testing.T) {
	keys := map[string]revision.Key{}
	cluster := func(name string) string {
		k := revision.Key{Namespace: "default", Name: name}
		keys[name] = k
		return revision.ClusterName(k)
	}
	a, b, c, d := cluster("a"), cluster("b"), cluster("c"), cluster("d")
	type val struct {
		cluster       string
		active, total float64
	}
	flush := func(sec int, vals ...val) []byte {
		var stats []stat
		for _, v := range vals {
			stats = append(stats, counter("upstream_rq_total", v.cluster, v.total))
		}
		for _, v := range vals {
			stats = append(stats, gauge("upstream_rq_active", v.cluster, v.active))
		}
		return marshal(t, envoyMsg("", ts(sec), stats...))
	}
	sample := func(name string, sec int, conc, reqs float64) autoscaler.Sample {
		return autoscaler.Sample{Revision: keys[name], Source: "envoy-1", Time: at(sec), Concurrency: conc, Requests: reqs}
	}
	steps := []struct {
		name string
		msg  []byte
		want []autoscaler.Sample
	}{
		{"first flush sets the counter bases", flush(1, val{a, 1, 10}, val{b, 2, 20}, val{c, 3, 30}),
			[]autoscaler.Sample{sample("a", 1, 1, 0), sample("b", 1, 2, 0), sample("c", 1, 3, 0)}},
		{"same clusters, reversed", flush(2, val{c, 30, 35}, val{b, 20, 22}, val{a, 10, 11}),
			[]autoscaler.Sample{sample("a", 2, 10, 1), sample("b", 2, 20, 2), sample("c", 2, 30, 5)}},
		{"one inserted in front, one dropped", flush(3, val{d, 4, 40}, val{a, 5, 16}, val{b, 6, 29}),
			[]autoscaler.Sample{sample("a", 3, 5, 5), sample("b", 3, 6, 7), sample("d", 3, 4, 40)}},
		{"the dropped one is back, one dropped, positions shift back", flush(4, val{a, 7, 17}, val{c, 8, 38}, val{b, 9, 30}),
			[]autoscaler.Sample{sample("a", 4, 7, 1), sample("b", 4, 9, 1), sample("c", 4, 8, 3)}},
		{"as before: every guess right; d absent a whole flush gets its zero", flush(5, val{a, 1, 18}, val{c, 2, 39}, val{b, 3, 31}),
			[]autoscaler.Sample{sample("a", 5, 1, 1), sample("b", 5, 3, 1), sample("c", 5, 2, 1), sample("d", 5, 0, 0)}},
	}
	rec, clk, n := connectedNode(t)
	for i, st := range steps {
		clk.SetTime(at(i + 1))
		n.ingest(st.msg, clk.Now())
		checkSamples(t, st.name, rec.take(), st.want)
		checkSeen(t, n)
	}
}

// TestOrderBounded: metrics of clusters that get no entry (revisions the
// registry does not know) cannot grow the node's position guesses: they
// stay bounded by the entries the node has.
func TestOrderBounded(t *testing.T) {
	known := revision.Key{Namespace: "default", Name: "known"}
	sink := New(Options{Recorder: &fakeRecorder{}, Clock: clocktesting.NewFakeClock(t0),
		Limits: Limits{Known: func(k revision.Key) bool { return k == known }}})
	n, err := sink.connect("envoy-1")
	if err != nil {
		t.Fatal(err)
	}
	stats := append(fakeClusters(5000), gauge("upstream_rq_active", revision.ClusterName(known), 1))
	for sec := range 3 {
		n.ingest(marshal(t, envoyMsg("", ts(sec), stats...)), at(sec))
	}
	if len(n.entries) != 1 {
		t.Fatalf("%d entries, want 1 (the known revision)", len(n.entries))
	}
	if limit := 4*len(n.entries) + 64; len(n.order) > limit {
		t.Fatalf("%d position guesses for %d entries, want at most %d", len(n.order), len(n.entries), limit)
	}
}

// TestStaleClusterForgotten: a cluster absent for more than staleFlushes
// flushes gets one zero sample, then loses its state (counter base); when
// it comes back its counter counts in full, as for any cluster first seen
// after the node's first flush.
func TestStaleClusterForgotten(t *testing.T) {
	a := revision.Key{Namespace: "default", Name: "a"}
	b := revision.Key{Namespace: "default", Name: "b"}
	ca, cb := revision.ClusterName(a), revision.ClusterName(b)
	rec, clk, n := connectedNode(t)
	ingest := func(sec int, stats ...stat) {
		t.Helper()
		clk.SetTime(at(sec))
		n.ingest(marshal(t, envoyMsg("", ts(sec), stats...)), clk.Now())
		checkSeen(t, n)
	}
	ingest(1, counter("upstream_rq_total", ca, 5), counter("upstream_rq_total", cb, 7))
	ingest(2, counter("upstream_rq_total", ca, 5))
	ingest(3, counter("upstream_rq_total", ca, 5))
	checkSamples(t, "b absent a whole flush", rec.take(), []autoscaler.Sample{
		{Revision: a, Source: "envoy-1", Time: at(1)}, {Revision: b, Source: "envoy-1", Time: at(1)},
		{Revision: a, Source: "envoy-1", Time: at(2)},
		{Revision: a, Source: "envoy-1", Time: at(3)}, {Revision: b, Source: "envoy-1", Time: at(3)}})
	last := 3 + staleFlushes
	for sec := 4; sec <= last; sec++ {
		ingest(sec, counter("upstream_rq_total", ca, 5))
	}
	if _, ok := n.entries[cb]; ok {
		t.Fatalf("b still has an entry after %d flushes without it", staleFlushes+1)
	}
	rec.take()
	ingest(last+1, counter("upstream_rq_total", ca, 5), counter("upstream_rq_total", cb, 9))
	checkSamples(t, "b back", rec.take(), []autoscaler.Sample{
		{Revision: a, Source: "envoy-1", Time: at(last + 1)},
		{Revision: b, Source: "envoy-1", Time: at(last + 1), Requests: 9}})
}

// connectedNode returns a sink's node "envoy-1", connected, with the
// recorder and the fake clock of its sink.
func connectedNode(t *testing.T) (*fakeRecorder, *clocktesting.FakeClock, *node) {
	t.Helper()
	rec := &fakeRecorder{}
	clk := clocktesting.NewFakeClock(t0)
	n, err := New(Options{Recorder: rec, Clock: clk}).connect("envoy-1")
	if err != nil {
		t.Fatal(err)
	}
	return rec, clk, n
}
