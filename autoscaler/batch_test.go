package autoscaler

import (
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/thaw-dev/thaw/revision"
)

// TestRecordBatchMatchesRecord feeds the same random history (several
// revisions and sources, late and future samples, Forget and Expire
// between batches, a Known that refuses one revision) to two collectors:
// one sample at a time through Record, and per source and second through
// RecordBatch with Refs kept across batches, as the stats sink keeps them.
// Every window, and the drop counters, must be identical after each step.
func TestRecordBatchMatchesRecord(t *testing.T) {
	keys := []revision.Key{{Namespace: "a", Name: "x"}, {Namespace: "a", Name: "y"}, {Namespace: "b", Name: "x"}, {Namespace: "b", Name: "refused"}}
	sources := []string{"envoy-0", "envoy-1", "envoy-2"}
	known := func(k revision.Key) bool { return k.Name != "refused" }
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 14))
		clk := testingclock.NewFakePassiveClock(at(100))
		opts := CollectorOptions{Clock: clk, SourceExpiry: 2 * time.Second, Window: 8 * time.Second, Known: known}
		one, batched := NewCollector(opts), NewCollector(opts)
		refs := map[string][]Ref{}
		for _, s := range sources {
			refs[s] = make([]Ref, len(keys))
		}
		for i := range 600 {
			step := time.Duration(rng.IntN(1500)) * time.Millisecond
			if rng.IntN(50) == 0 {
				step = time.Duration(rng.IntN(20)) * time.Second // sources expire, runs restart
			}
			clk.SetTime(clk.Now().Add(step))
			switch r := rng.IntN(40); {
			case r == 0:
				k := keys[rng.IntN(len(keys))]
				one.Forget(k)
				batched.Forget(k)
			case r == 1:
				one.Expire(clk.Now())
				batched.Expire(clk.Now())
			default:
				// The active sources change every 60 steps, so that
				// silent ones are pruned and the others move in the
				// series' source list (stale Ref hints).
				src := sources[(rng.IntN(2)+i/60)%len(sources)]
				// Mostly now; sometimes late (out of order, or older than the
				// ring) or ahead of the clock.
				ts := clk.Now().Add(-time.Duration(rng.IntN(3)) * time.Second)
				if rng.IntN(10) == 0 {
					ts = clk.Now().Add(time.Duration(rng.IntN(30)-15) * time.Second)
				}
				b := &Batch{Source: src, Time: ts}
				for j, k := range keys {
					if rng.IntN(3) == 0 {
						continue
					}
					conc, reqs := float64(rng.IntN(20)), float64(rng.IntN(50))
					if rng.IntN(20) == 0 {
						conc = -1 // counts as 0 on both paths
					}
					one.Record(Sample{Revision: k, Source: src, Time: ts, Concurrency: conc, Requests: reqs})
					ref := &refs[src][j]
					if rng.IntN(10) == 0 {
						ref.src = rng.IntN(4) // a stale hint: must be caught by the name check
					}
					b.Samples = append(b.Samples, BatchSample{Revision: k, Concurrency: conc, Requests: reqs, Ref: ref})
				}
				batched.RecordBatch(b)
			}
			if one.Dropped() != batched.Dropped() || one.DroppedUnknown() != batched.DroppedUnknown() {
				t.Fatalf("seed %d step %d: dropped %d/%d (Record) vs %d/%d (RecordBatch)", seed, i,
					one.Dropped(), one.DroppedUnknown(), batched.Dropped(), batched.DroppedUnknown())
			}
			for _, k := range keys {
				want, wantErr := one.StableAndPanic(k, clk.Now(), 6*time.Second, 2*time.Second)
				got, gotErr := batched.StableAndPanic(k, clk.Now(), 6*time.Second, 2*time.Second)
				if !errors.Is(gotErr, wantErr) || got != want {
					t.Fatalf("seed %d step %d %v: RecordBatch gives %+v (%v), Record %+v (%v)", seed, i, k, got, gotErr, want, wantErr)
				}
			}
		}
	}
}

// TestRecordBatchFallback: a Recorder without RecordBatch gets one Record
// per sample, with the batch's source and time.
func TestRecordBatchFallback(t *testing.T) {
	var got []Sample
	rec := recorderFunc(func(s Sample) { got = append(got, s) })
	k1, k2 := revision.Key{Namespace: "n", Name: "a"}, revision.Key{Namespace: "n", Name: "b"}
	RecordBatch(rec, &Batch{Source: "envoy", Time: at(3), Samples: []BatchSample{
		{Revision: k1, Concurrency: 2, Requests: 5}, {Revision: k2}}})
	want := []Sample{{Revision: k1, Source: "envoy", Time: at(3), Concurrency: 2, Requests: 5}, {Revision: k2, Source: "envoy", Time: at(3)}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("recorded %+v, want %+v", got, want)
	}
}

type recorderFunc func(Sample)

func (f recorderFunc) Record(s Sample) { f(s) }
