package modsvc

import (
	"fmt"
	"testing"
	"time"

	"github.com/thaw-dev/thaw/module/state"
	"github.com/thaw-dev/thaw/revision"
)

func TestCountsSumFreshReports(t *testing.T) {
	now := time.Unix(1000, 0)
	s := &Server{Now: func() time.Time { return now }}
	a, b := revision.Key{Namespace: "local", Name: "a"}, revision.Key{Namespace: "local", Name: "b"}
	report := func(node string, counts ...state.RevisionCounts) {
		t.Helper()
		if err := s.apply(&state.Report{Node: node, Revisions: counts}); err != nil {
			t.Fatal(err)
		}
	}
	check := func(what string, key revision.Key, held, inFlight int) {
		t.Helper()
		if h, f := s.Counts(key); h != held || f != inFlight {
			t.Errorf("%s: Counts(%s) = %d held, %d in flight; want %d, %d", what, key, h, f, held, inFlight)
		}
	}
	check("no report", a, 0, 0)
	report("n1", state.RevisionCounts{Key: "local/a", Held: 2, InFlight: 1}, state.RevisionCounts{Key: "local/b", InFlight: 4})
	report("n2", state.RevisionCounts{Key: "local/a", Held: 3})
	check("two Envoys", a, 5, 1)
	check("two Envoys", b, 0, 4)
	now = now.Add(2 * time.Second)
	report("n1") // n1 holds nothing now: its last report replaces the earlier one
	check("n1 emptied", a, 3, 0)
	check("n1 emptied", b, 0, 0)
	now = now.Add(countsFresh)
	check("n2 silent past countsFresh", a, 0, 0)
}

func TestCountsBoundedByMaxNodes(t *testing.T) {
	now := time.Unix(1000, 0)
	var r reported
	one := []state.RevisionCounts{{Key: "local/a", Held: 1}}
	for i := 0; i < MaxNodes; i++ {
		r.set(fmt.Sprintf("n%d", i), now, one)
	}
	a := revision.Key{Namespace: "local", Name: "a"}
	r.set("extra", now, one)
	if h, _ := r.sum(a, now); h != MaxNodes || len(r.nodes) != MaxNodes {
		t.Fatalf("past MaxNodes fresh nodes: %d nodes, %d held; want the new node refused (%d)", len(r.nodes), h, MaxNodes)
	}
	later := now.Add(countsFresh + time.Second)
	r.set("extra", later, one)
	if h, _ := r.sum(a, later); h != 1 || len(r.nodes) != 1 {
		t.Fatalf("after the others went stale: %d nodes, %d held; want them dropped and the new node kept", len(r.nodes), h)
	}
}
