package revision

import (
	"fmt"
	"testing"
	"time"
)

// changesUnsized is Changes's catch-up walk as it was before the union
// map was sized (unionBound): the baseline of BenchmarkChangesCatchUp.
func changesUnsized(sets []changeSet, yield func(Key) bool) {
	yieldUnion(sets, map[Key]struct{}{}, yield)
}

// BenchmarkChangesCatchUp measures a reader catching up on the 100,000
// revisions of a start published in 8 batches (Changes from the empty
// snapshot over 8 logged publications), as the controller, activator and
// autoscaler each do when thaw starts. "unsized" is the walk before its
// union map was sized, in the same run; compare the two.
func BenchmarkChangesCatchUp(b *testing.B) {
	const n, batches = 100_000, 8
	r := NewRegistry(RegistryOptions{Holdoff: time.Hour})
	empty := r.Snapshot()
	for i := range n {
		k := Key{Namespace: "bench", Name: fmt.Sprintf("r%06d", i)}
		spec := validSpec()
		spec.Hosts = []string{k.Name + ".example.com"}
		r.Upsert(k, spec)
		if (i+1)%(n/batches) == 0 {
			r.publishNow()
		}
	}
	snap := r.Snapshot()
	sets, ok := snap.changeSets(empty)
	if !ok || len(sets) != batches {
		b.Fatalf("change sets: ok %v, %d sets, want %d", ok, len(sets), batches)
	}
	count := func(seq func(func(Key) bool)) int {
		c := 0
		seq(func(Key) bool { c++; return true })
		return c
	}
	b.Run("sized", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			if c := count(snap.Changes(empty)); c != n {
				b.Fatalf("yielded %d keys, want %d", c, n)
			}
		}
	})
	b.Run("unsized", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			if c := count(func(y func(Key) bool) { changesUnsized(sets, y) }); c != n {
				b.Fatalf("yielded %d keys, want %d", c, n)
			}
		}
	})
}
