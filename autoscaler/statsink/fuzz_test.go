package statsink

import (
	"math"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/thaw-dev/thaw/revision"
)

// FuzzIngest feeds two arbitrary StreamMetricsMessages (wire bytes, as a
// client of the stats port may send them) one second apart to a node of a
// real sink. Whatever the bytes, decoding must not panic and every sample
// recorded must be sane: from that node, for a revision whose cluster name
// round-trips, finite and non-negative, stamped within the allowed clock
// skew; the node's counts of entries seen in the current and the previous
// flush match its entries. `go test` runs only the seeds.
func FuzzIngest(f *testing.F) {
	demo := revision.ClusterName(revision.Key{Namespace: "default", Name: "demo"})
	local := revision.ClusterName(revision.Key{Namespace: "local", Name: "My_App"})
	f.Add(marshal(f, envoyMsg("n", ts(0), gauge("upstream_rq_active", demo, 3), counter("upstream_rq_total", demo, 10))),
		marshal(f, envoyMsg("n", ts(1), gauge("upstream_rq_active", demo, 1), counter("upstream_rq_total", demo, 25))))
	f.Add(marshal(f, envoyMsg("n", 0, gauge("upstream_rq_pending_active", local, 2), gauge("upstream_rq_active", "thaw_xds", 1))),
		marshal(f, envoyMsg("", 0, counter("upstream_rq_total", local, 7))))
	f.Add(marshal(f, envoyMsg("n", ts(0), gauge("upstream_rq_active", demo, math.Inf(1)), gauge("upstream_rq_active", demo, -1))),
		marshal(f, envoyMsg("n", ts(-3600), counter("upstream_rq_total", demo, math.NaN()), counter("upstream_rq_total", "rev_x", 1))))
	untyped := envoyMsg("n", ts(0), stat{family: familyRqActive, typ: dto.MetricType_UNTYPED, cluster: demo, value: 4})
	f.Add(marshal(f, untyped), []byte{0x12, 0x05, 0x0a, 0x03, 'a', 'b'})
	f.Add([]byte{0x0a, 0x80}, []byte{0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, first, second []byte) {
		_, _ = nodeID(first) // must not panic on any input
		rec := &fakeRecorder{}
		clk := clocktesting.NewFakeClock(t0)
		sink := New(Options{Recorder: rec, Clock: clk})
		n, err := sink.connect("fuzz-node")
		if err != nil {
			t.Fatalf("connect: %v", err)
		}
		n.ingest(first, clk.Now())
		checkSeen(t, n)
		clk.Step(time.Second)
		n.ingest(second, clk.Now())
		checkSeen(t, n)
		for _, s := range rec.take() {
			if s.Source != "fuzz-node" {
				t.Fatalf("sample from %q, want fuzz-node: %+v", s.Source, s)
			}
			if k, ok := revision.RevisionFromCluster(revision.ClusterName(s.Revision)); !ok || k != s.Revision {
				t.Fatalf("sample for %v, which is not a revision cluster key", s.Revision)
			}
			for _, v := range []float64{s.Concurrency, s.Requests} {
				if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
					t.Fatalf("sample value %v: %+v", v, s)
				}
			}
			if s.Time.Before(t0.Add(-maxClockSkew)) || s.Time.After(t0.Add(time.Second+maxClockSkew)) {
				t.Fatalf("sample time %v outside the allowed skew around %v", s.Time, t0)
			}
		}
	})
}

// checkSeen fails when n.seenCur and n.seenPrev are not the numbers of
// entries seen in n's current and previous flush (emit trusts them to skip
// its walk for missing clusters).
func checkSeen(t *testing.T, n *node) {
	t.Helper()
	var cur, prev int
	for _, e := range n.entries {
		switch e.seenGen {
		case n.gen:
			cur++
		case n.gen - 1:
			prev++
		}
	}
	if cur != n.seenCur || prev != n.seenPrev {
		t.Fatalf("seen counts cur %d prev %d, entries say cur %d prev %d", n.seenCur, n.seenPrev, cur, prev)
	}
}
