package statsink

import (
	"fmt"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/thaw-dev/thaw/autoscaler"
	"github.com/thaw-dev/thaw/revision"
)

// knownOnly returns a Limits.Known that accepts only keys.
func knownOnly(keys ...revision.Key) func(revision.Key) bool {
	set := map[revision.Key]bool{}
	for _, k := range keys {
		set[k] = true
	}
	return func(k revision.Key) bool { return set[k] }
}

// fakeClusters returns n well-formed revision cluster stats of revisions
// nobody created.
func fakeClusters(n int) []stat {
	out := make([]stat, n)
	for i := range out {
		out[i] = gauge("upstream_rq_active", revision.ClusterName(revision.Key{Namespace: "fake", Name: fmt.Sprintf("r%d", i)}), 1)
	}
	return out
}

func (env *sinkEnv) entries(id string) int {
	env.sink.mu.Lock()
	n := env.sink.nodes[id]
	env.sink.mu.Unlock()
	if n == nil {
		return -1
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.entries)
}

// TestUnknownRevisionsKeepNoState: cluster names of revisions the registry
// does not know are dropped and counted, and no per-node entry is kept
// for them; the known revision in the same message is recorded.
func TestUnknownRevisionsKeepNoState(t *testing.T) {
	const fakes = 20000
	env := startSinkWith(t, Limits{Known: knownOnly(demo)})
	st := env.open(t)
	stats := append(fakeClusters(fakes), gauge("upstream_rq_active", demoCluster, 3))
	env.send(t, st, envoyMsg("envoy-1", ts(1), stats...))
	checkSamples(t, "known revision among fakes", env.rec.take(), []autoscaler.Sample{sample("envoy-1", demo, 1, 3, 0)})
	if got := env.entries("envoy-1"); got != 1 {
		t.Errorf("node entries = %d, want 1 (only the known revision)", got)
	}
	if got := env.bad(reasonUnknownRevision); got != fakes {
		t.Errorf("bad_input_total{reason=unknown_revision} = %v, want %d", got, fakes)
	}
}

// TestUnknownRevisionCounterStartsAsBase: a revision whose stats were
// dropped while unknown sets only its counter base when it becomes known,
// so its whole history is not counted as new requests.
func TestUnknownRevisionCounterStartsAsBase(t *testing.T) {
	var known atomic.Bool
	env := startSinkWith(t, Limits{Known: func(k revision.Key) bool { return k == demo && known.Load() }})
	st := env.open(t)
	env.send(t, st, envoyMsg("envoy-1", ts(1), counter("upstream_rq_total", demoCluster, 500)))
	env.send(t, st, envoyMsg("", ts(2), counter("upstream_rq_total", demoCluster, 600)))
	checkSamples(t, "unknown", env.rec.take(), nil)
	known.Store(true)
	env.send(t, st, envoyMsg("", ts(3), counter("upstream_rq_total", demoCluster, 700)))
	env.send(t, st, envoyMsg("", ts(4), counter("upstream_rq_total", demoCluster, 710)))
	checkSamples(t, "known", env.rec.take(), []autoscaler.Sample{sample("envoy-1", demo, 3, 0, 0), sample("envoy-1", demo, 4, 0, 10)})
}

// TestClustersPerNodeBounded: beyond MaxClustersPerNode, new clusters are
// ignored and counted; known entries keep working.
func TestClustersPerNodeBounded(t *testing.T) {
	env := startSinkWith(t, Limits{MaxClustersPerNode: 2})
	st := env.open(t)
	env.send(t, st, envoyMsg("envoy-1", ts(1), append([]stat{gauge("upstream_rq_active", demoCluster, 1)}, fakeClusters(5)...)...))
	if got := env.entries("envoy-1"); got != 2 {
		t.Errorf("node entries = %d, want 2", got)
	}
	if got := env.bad(reasonTooManyClusters); got != 4 {
		t.Errorf("bad_input_total{reason=too_many_clusters} = %v, want 4", got)
	}
	env.rec.take()
	env.send(t, st, envoyMsg("", ts(2), gauge("upstream_rq_active", demoCluster, 2)))
	checkSamples(t, "demo still recorded", env.rec.take(), []autoscaler.Sample{sample("envoy-1", demo, 2, 2, 0)})
}

// refused sends the identifying first message of node on a new stream and
// checks the stream is refused with ResourceExhausted.
func (env *sinkEnv) refused(t *testing.T, node string) {
	t.Helper()
	st := env.open(t)
	if err := st.Send(envoyMsg(node, ts(1), gauge("upstream_rq_active", demoCluster, 1))); err != nil {
		t.Fatal(err)
	}
	if _, err := st.CloseAndRecv(); status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("node %s: CloseAndRecv = %v, want ResourceExhausted", node, err)
	}
}

// TestNodesBounded: beyond MaxNodes a new node id first evicts the idle
// node that left first (recording its zero samples, as its expiry would);
// with every node connected it is refused and counted.
func TestNodesBounded(t *testing.T) {
	env := startSinkWith(t, Limits{MaxNodes: 2})
	one := env.open(t)
	env.send(t, one, envoyMsg("envoy-1", ts(1), gauge("upstream_rq_active", demoCluster, 1)))
	two := env.open(t)
	env.send(t, two, envoyMsg("envoy-2", ts(1), gauge("upstream_rq_active", otherCluster, 1)))
	env.rec.take()

	env.refused(t, "envoy-3")
	if got := env.bad(reasonTooManyNodes); got != 1 {
		t.Errorf("bad_input_total{reason=too_many_nodes} = %v, want 1", got)
	}
	// envoy-2 keeps working meanwhile.
	env.send(t, two, envoyMsg("", ts(2), gauge("upstream_rq_active", otherCluster, 4)))
	checkSamples(t, "envoy-2 meanwhile", env.rec.take(), []autoscaler.Sample{sample("envoy-2", other, 2, 4, 0)})

	if _, err := one.CloseAndRecv(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "envoy-1 idle", func() bool {
		env.sink.mu.Lock()
		defer env.sink.mu.Unlock()
		return env.sink.idle.Len() == 1
	})
	three := env.open(t)
	env.send(t, three, envoyMsg("envoy-3", ts(3), gauge("upstream_rq_active", demoCluster, 2)))
	checkSamples(t, "envoy-1 evicted for envoy-3", env.rec.take(), []autoscaler.Sample{
		{Revision: demo, Source: "envoy-1", Time: env.clock.Now()}, sample("envoy-3", demo, 3, 2, 0)})
	if got := env.entries("envoy-1"); got != -1 {
		t.Errorf("envoy-1 still has state (%d entries)", got)
	}
}

// TestDuplicateNodeRefused: a second concurrent stream with a node id that
// already streams is refused and counted (two Envoys with one id would mix
// their counters in one set of bases); the first keeps working, and once it
// ended the id may connect again.
func TestDuplicateNodeRefused(t *testing.T) {
	env := startSink(t)
	st := env.open(t)
	env.send(t, st, envoyMsg("envoy-1", ts(1), gauge("upstream_rq_active", demoCluster, 1)))
	env.rec.take()
	env.refused(t, "envoy-1")
	if got := env.bad(reasonDuplicateNode); got != 1 {
		t.Errorf("bad_input_total{reason=duplicate_node} = %v, want 1", got)
	}
	env.send(t, st, envoyMsg("", ts(2), gauge("upstream_rq_active", demoCluster, 5)))
	checkSamples(t, "admitted stream", env.rec.take(), []autoscaler.Sample{sample("envoy-1", demo, 2, 5, 0)})
	if _, err := st.CloseAndRecv(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "envoy-1 stream ended", func() bool {
		env.sink.mu.Lock()
		defer env.sink.mu.Unlock()
		return env.sink.nodes["envoy-1"] != nil && env.sink.nodes["envoy-1"].streams == 0
	})
	env.send(t, env.open(t), envoyMsg("envoy-1", ts(3), gauge("upstream_rq_active", demoCluster, 2)))
	checkSamples(t, "reconnected", env.rec.take(), []autoscaler.Sample{sample("envoy-1", demo, 3, 2, 0)})
}
