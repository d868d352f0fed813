package revision

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
)

func TestRegistryModeWritesNeverCreate(t *testing.T) {
	r := NewRegistry(RegistryOptions{})
	k := Key{"ns", "gone"}
	if _, ok := r.SetMode(k, ModeServe); ok {
		t.Error("SetMode on an unknown key reported ok")
	}
	r.Upsert(k, validSpec())
	rev := r.Snapshot().Get(k)
	r.Delete(k)
	desired := int32(3)
	if _, ok := r.SetDecision(rev, &desired, ModeServe); ok {
		t.Error("SetDecision on a deleted revision reported ok")
	}
	r.SetMode(k, ModeServe)
	r.SetDesiredScale(k, 2)
	if n := len(r.entries); n != 0 {
		t.Fatalf("mode and scale writes after Delete left %d entries", n)
	}
	v := r.Snapshot().Version
	r.Upsert(k, validSpec())
	got := r.Snapshot().Get(k)
	if got == nil || got.Mode != ModeProxy || got.DesiredScale != -1 {
		t.Fatalf("re-created revision = %+v, want proxy mode and desired -1 (nothing inherited)", got)
	}
	if got.Generation <= rev.Generation {
		t.Errorf("re-created revision's generation %d repeats the old one's (%d)", got.Generation, rev.Generation)
	}
	if r.Snapshot().Version != v+1 {
		t.Errorf("writes to a missing revision published snapshots")
	}
}

func TestRegistrySetDecisionRefusesAnEarlierRevisionOfTheKey(t *testing.T) {
	r := NewRegistry(RegistryOptions{})
	k := Key{"ns", "again"}
	r.Upsert(k, validSpec())
	old := r.Snapshot().Get(k)
	r.Delete(k)
	r.Upsert(k, validSpec())
	desired := int32(5)
	if _, ok := r.SetDecision(old, &desired, ModeServe); ok {
		t.Fatal("a decision about the deleted revision was applied to the new one")
	}
	if got := r.Snapshot().Get(k); got.Mode != ModeProxy || got.DesiredScale != -1 {
		t.Fatalf("new revision = %+v, want proxy and desired -1", got)
	}
	// A basis from the current revision, even one published changes ago,
	// is applied.
	cur := r.Snapshot().Get(k)
	r.SetBackends(k, []Backend{{Address: "127.0.0.1", Port: 80, Ready: true}})
	if prev, ok := r.SetDecision(cur, &desired, ModeServe); !ok || prev != ModeProxy {
		t.Fatalf("SetDecision = %v, %v; want previous proxy, true", prev, ok)
	}
	if got := r.Snapshot().Get(k); got.Mode != ModeServe || got.DesiredScale != 5 || got.ModeGeneration != got.Generation {
		t.Fatalf("after the decision = %+v", got)
	}
	// nil desired keeps the desired scale.
	if _, ok := r.SetDecision(r.Snapshot().Get(k), nil, ModeProxy); !ok {
		t.Fatal("SetDecision without desired refused")
	}
	if got := r.Snapshot().Get(k); got.Mode != ModeProxy || got.DesiredScale != 5 {
		t.Fatalf("after a mode-only decision = %+v", got)
	}
}

// decisionRecord is one SetDecision call, recorded before it is made.
type decisionRecord struct {
	basis   uint64 // the basis revision's Generation
	desired int32
	mode    Mode
}

// TestRegistryConcurrentHistories runs random histories of platform writes
// (Upsert, SetInvalid, SetBackends, Delete) and mode control's writes
// (snapshot read, then SetDecision; SetMode to proxy, SetDesiredScale to
// unknown) from several goroutines at once, under -race. Throughout:
//   - no entry exists that only a mode or scale write could have made (no
//     spec, no error, no backends);
//   - every revision in serve mode, or with a desired scale, got it from a
//     decision whose basis was that same revision (its Generation at or
//     after the entry's creation): a re-created revision inherits nothing;
//
// and at the end the last snapshot agrees with the entries.
func TestRegistryConcurrentHistories(t *testing.T) {
	for seed := range uint64(8) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			h := &history{r: NewRegistry(RegistryOptions{}), decisions: map[Key][]decisionRecord{}}
			keys := make([]Key, 6)
			for i := range keys {
				keys[i] = Key{Namespace: "t", Name: fmt.Sprint("r", i)}
			}
			var wg sync.WaitGroup
			for g := range 4 {
				wg.Go(func() {
					rng := rand.New(rand.NewPCG(seed, uint64(g)))
					for range 600 {
						h.step(rng, keys[rng.IntN(len(keys))])
						if rng.IntN(20) == 0 {
							h.check(t)
						}
					}
				})
			}
			wg.Wait()
			h.check(t)
			h.r.publishNow()
			checkAgainstEntries(t, h.r, h.r.Snapshot())
		})
	}
}

type history struct {
	r         *Registry
	mu        sync.Mutex
	decisions map[Key][]decisionRecord
}

func (h *history) step(rng *rand.Rand, k Key) {
	r := h.r
	switch rng.IntN(8) {
	case 0, 1:
		r.Upsert(k, validSpec())
	case 2:
		r.Delete(k)
	case 3:
		r.SetInvalid(k, fmt.Errorf("bad %d", rng.IntN(2)))
	case 4:
		r.SetBackends(k, []Backend{{Address: "127.0.0.1", Port: int32(80 + rng.IntN(2)), Ready: true}})
	case 5:
		r.SetMode(k, ModeProxy)
		r.SetDesiredScale(k, -1)
	default:
		rev := r.Snapshot().Get(k)
		if rev == nil {
			return
		}
		runtime.Gosched() // let deletes and re-creations in
		d := int32(rng.IntN(4))
		m := Mode(rng.IntN(2))
		h.mu.Lock()
		h.decisions[k] = append(h.decisions[k], decisionRecord{rev.Generation, d, m})
		h.mu.Unlock()
		r.SetDecision(rev, &d, m)
	}
}

// check takes the history's lock, then the registry's, and checks the
// invariants on every entry.
func (h *history) check(t *testing.T) {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	h.r.mu.Lock()
	defer h.r.mu.Unlock()
	for k, e := range h.r.entries {
		if e.spec == nil && e.invalid == nil && len(e.backends) == 0 {
			t.Errorf("%s: entry with no spec, error or backends (made by a mode or scale write)", k)
		}
		if (e.mode == ModeServe || e.desired != -1) && !decidedFor(h.decisions[k], e) {
			t.Errorf("%s: mode %v desired %d (created at %d) without a decision about this revision", k, e.mode, e.desired, e.created)
		}
	}
}

// decidedFor reports whether some decision about e's own revision set its
// mode (when serve) and its desired scale (when set).
func decidedFor(recs []decisionRecord, e *entry) bool {
	modeOK, desiredOK := e.mode != ModeServe, e.desired == -1
	for _, d := range recs {
		if d.basis < e.created {
			continue
		}
		modeOK = modeOK || d.mode == ModeServe
		desiredOK = desiredOK || d.desired == e.desired
	}
	return modeOK && desiredOK
}
