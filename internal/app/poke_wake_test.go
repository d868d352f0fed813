package app

import (
	"testing"

	"github.com/thaw-dev/thaw/autoscaler"
	"github.com/thaw-dev/thaw/revision"
)

// TestPokingRecorderQuiet: for a revision whose wake policy answers at
// zero, requests already answered (the policy's instant answers) do not
// poke; a request in flight (held) does. Other revisions are unchanged.
func TestPokingRecorderQuiet(t *testing.T) {
	quietKey := revision.Key{Namespace: "ns", Name: "quiet"}
	other := revision.Key{Namespace: "ns", Name: "other"}
	quiet := func(k revision.Key) bool { return k == quietKey }
	for _, tc := range []struct {
		name      string
		s         autoscaler.Sample
		wantPokes int
	}{
		{"answered by the policy", autoscaler.Sample{Revision: quietKey, Requests: 3}, 0},
		{"held", autoscaler.Sample{Revision: quietKey, Requests: 1, Concurrency: 1}, 1},
		{"no policy, answered", autoscaler.Sample{Revision: other, Requests: 1}, 1},
	} {
		for _, single := range []bool{false, true} {
			want := tc.wantPokes
			if single && tc.s.Revision == quietKey {
				want = 0 // the activator pokes for its held requests itself
			}
			rec, p := &countRecorder{}, &keyPoker{}
			pokingRecorder{Recorder: rec, poker: p, quiet: quiet, single: single}.Record(tc.s)
			if len(p.keys) != want {
				t.Errorf("%s, single %v: pokes %v, want %d", tc.name, single, p.keys, want)
			}
		}
		t.Run(tc.name, func(t *testing.T) {
			rec, p := &countRecorder{}, &keyPoker{}
			pokingRecorder{Recorder: rec, poker: p, quiet: quiet}.Record(tc.s)
			if rec.n != 1 || len(p.keys) != tc.wantPokes {
				t.Fatalf("recorded %d, pokes %v; want 1 and %d", rec.n, p.keys, tc.wantPokes)
			}
			p = &keyPoker{}
			pokingRecorder{Recorder: rec, poker: p, quiet: quiet}.RecordBatch(&autoscaler.Batch{Source: "envoy", Time: tc.s.Time,
				Samples: []autoscaler.BatchSample{{Revision: tc.s.Revision, Concurrency: tc.s.Concurrency, Requests: tc.s.Requests}}})
			if len(p.keys) != tc.wantPokes {
				t.Fatalf("batch: pokes %v, want %d", p.keys, tc.wantPokes)
			}
		})
	}
}
