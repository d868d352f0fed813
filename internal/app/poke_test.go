package app

import (
	"testing"

	"github.com/thaw-dev/thaw/autoscaler"
	"github.com/thaw-dev/thaw/revision"
)

type countRecorder struct{ n int }

func (c *countRecorder) Record(autoscaler.Sample) { c.n++ }

type keyPoker struct{ keys []revision.Key }

func (p *keyPoker) Poke(k revision.Key) { p.keys = append(p.keys, k) }

func TestPokingRecorder(t *testing.T) {
	key := revision.Key{Namespace: "ns", Name: "a"}
	for _, tc := range []struct {
		name      string
		s         autoscaler.Sample
		wantPokes int
	}{
		{"new requests", autoscaler.Sample{Revision: key, Requests: 2, Concurrency: 2}, 1},
		{"new request already answered", autoscaler.Sample{Revision: key, Requests: 1}, 1},
		{"only a long response in flight", autoscaler.Sample{Revision: key, Concurrency: 1}, 0},
		{"idle", autoscaler.Sample{Revision: key}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec, p := &countRecorder{}, &keyPoker{}
			pokingRecorder{Recorder: rec, poker: p}.Record(tc.s)
			if rec.n != 1 {
				t.Errorf("recorded %d samples, want 1", rec.n)
			}
			if len(p.keys) != tc.wantPokes {
				t.Errorf("poked %d times, want %d", len(p.keys), tc.wantPokes)
			}
			// The same sample in a batch (the stats sink's path).
			rec, p = &countRecorder{}, &keyPoker{}
			pokingRecorder{Recorder: rec, poker: p}.RecordBatch(&autoscaler.Batch{Source: "envoy", Time: tc.s.Time,
				Samples: []autoscaler.BatchSample{{Revision: tc.s.Revision, Concurrency: tc.s.Concurrency, Requests: tc.s.Requests}}})
			if rec.n != 1 {
				t.Errorf("batch: recorded %d samples, want 1", rec.n)
			}
			if len(p.keys) != tc.wantPokes {
				t.Errorf("batch: poked %d times, want %d", len(p.keys), tc.wantPokes)
			}
		})
	}
}
