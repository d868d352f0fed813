package revision

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// TestChangesOnRandomHistories drives a registry through random changes
// (adds, deletes, invalid specs, modes, backends, desired scale, batched
// publications) and checks every published snapshot against a plain model,
// and Changes between snapshots at random distances against a full
// comparison: every key whose entry differs is yielded, each key once.
func TestChangesOnRandomHistories(t *testing.T) {
	for seed := range uint64(20) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 7))
			r := NewRegistry(RegistryOptions{Holdoff: time.Hour}) // published by hand below
			keys := make([]Key, 40)
			for i := range keys {
				keys[i] = Key{Namespace: "t", Name: fmt.Sprint("r", i)}
			}
			snaps := []*Snapshot{r.Snapshot()}
			for step := range 400 {
				for range 1 + rng.IntN(4) { // a batch of changes, one publication
					k := keys[rng.IntN(len(keys))]
					switch rng.IntN(6) {
					case 0, 1:
						spec := validSpec()
						spec.Port = int32(8000 + rng.IntN(3))
						r.Upsert(k, spec)
					case 2:
						r.Delete(k)
					case 3:
						r.SetInvalid(k, errors.New("bad"))
					case 4:
						r.SetMode(k, Mode(rng.IntN(2)))
					case 5:
						r.SetDesiredScale(k, int32(rng.IntN(3)))
					}
				}
				if rng.IntN(10) == 0 {
					r.SetSynced()
				}
				r.publishNow()
				s := r.Snapshot()
				checkAgainstEntries(t, r, s)
				if s != snaps[len(snaps)-1] {
					snaps = append(snaps, s)
				}
				// Compare with a snapshot at a random distance, sometimes
				// past the log.
				back := 1 + rng.IntN(min(len(snaps), changeLogLen+10))
				old := snaps[len(snaps)-back]
				checkChanges(t, step, old, s)
				checkChanges(t, step, nil, s)
			}
		})
	}
}

func checkAgainstEntries(t *testing.T, r *Registry, s *Snapshot) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	valid, bad := 0, 0
	for k, e := range r.entries {
		switch {
		case e.invalid != nil:
			bad++
			if s.Invalid[k] == nil || s.Get(k) != nil {
				t.Fatalf("v%d %s: want invalid only", s.Version, k)
			}
		case e.spec != nil:
			valid++
			got := s.Get(k)
			if got == nil || got.Generation != e.generation || got.Mode != e.mode || got.DesiredScale != e.desired {
				t.Fatalf("v%d %s = %+v, want generation %d mode %v desired %d", s.Version, k, got, e.generation, e.mode, e.desired)
			}
		}
	}
	n := 0
	for range s.Revisions.All() {
		n++
	}
	if s.Revisions.Len() != valid || n != valid || len(s.Invalid) != bad {
		t.Fatalf("v%d: Len %d, All %d, Invalid %d; want %d valid, %d invalid", s.Version, s.Revisions.Len(), n, len(s.Invalid), valid, bad)
	}
}

func checkChanges(t *testing.T, step int, old, s *Snapshot) {
	t.Helper()
	seen := map[Key]bool{}
	for k := range s.Changes(old) {
		if seen[k] {
			t.Fatalf("step %d: Changes(v%d→v%d) yielded %s twice", step, old.version(), s.Version, k)
		}
		seen[k] = true
	}
	differs := func(k Key) bool {
		var ok, nk error
		if old != nil {
			ok = old.Invalid[k]
		}
		nk = s.Invalid[k]
		return old.Get(k) != s.Get(k) || (ok == nil) != (nk == nil)
	}
	for k := range s.Revisions.All() {
		if differs(k) && !seen[k] {
			t.Fatalf("step %d: Changes(v%d→v%d) missed %s", step, old.version(), s.Version, k)
		}
	}
	for k := range s.Invalid {
		if differs(k) && !seen[k] {
			t.Fatalf("step %d: Changes(v%d→v%d) missed invalid %s", step, old.version(), s.Version, k)
		}
	}
	if old == nil {
		return
	}
	for k := range old.Revisions.All() {
		if differs(k) && !seen[k] {
			t.Fatalf("step %d: Changes(v%d→v%d) missed removed %s", step, old.version(), s.Version, k)
		}
	}
}

func (s *Snapshot) version() uint64 {
	if s == nil {
		return 0
	}
	return s.Version
}

func TestRevisionMapSharesUnchangedShards(t *testing.T) {
	revs := make([]*Revision, 1000)
	for i := range revs {
		revs[i] = &Revision{Key: Key{Namespace: "t", Name: fmt.Sprint("r", i)}}
	}
	m := NewRevisionMap(revs...)
	k := revs[5].Key
	next := m.with(map[Key]*Revision{k: {Key: k, Generation: 2}})
	shared := 0
	for i := range m.shards {
		if i != shardOf(k) && fmt.Sprintf("%p", m.shards[i]) == fmt.Sprintf("%p", next.shards[i]) {
			shared++
		}
	}
	if shared != revShards-1 {
		t.Errorf("%d of %d unchanged shards shared, want all", shared, revShards-1)
	}
	if m.Get(k).Generation != 0 || next.Get(k).Generation != 2 || next.Len() != 1000 {
		t.Errorf("old %+v, new %+v, len %d", m.Get(k), next.Get(k), next.Len())
	}
	if gone := next.with(map[Key]*Revision{k: nil, {Namespace: "t", Name: "absent"}: nil}); gone.Len() != 999 || gone.Get(k) != nil {
		t.Errorf("after delete: len %d, get %v", gone.Len(), gone.Get(k))
	}
}
