package modsvc

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/thaw-dev/thaw/module/state"
	"github.com/thaw-dev/thaw/revision"
)

// toggleConfirmer confirms what the test says: per revision, the
// generation a node ACKed.
type toggleConfirmer struct {
	mu    sync.Mutex
	acked map[revision.Key]uint64
	ch    chan struct{}
}

func (c *toggleConfirmer) ConfirmedBy(_ string, key revision.Key, gen uint64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.acked[key] >= gen
}

func (c *toggleConfirmer) Changed() <-chan struct{} { return c.ch }

func (c *toggleConfirmer) ack(key revision.Key, gen uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.acked[key] = gen
}

// TestPatchMatchesRebuild: a stream that patches its messages from the
// registry's changes (perchange.go) sends, after every step of a random
// run of upserts, deletions, invalid specs, backend changes, wake
// failures and ACKs, exactly the message of a stream that rebuilds the
// whole state each time, and withholds the same backends; a module
// applying the patched messages holds what a full update gives it.
func TestPatchMatchesRebuild(t *testing.T) {
	for _, tc := range []struct {
		name    string
		confirm bool
		seed    uint64
		early   bool
	}{
		{"no confirmer", false, 1, false},
		{"confirmer", true, 2, false},
		{"confirmer, other seed", true, 3, false},
		{"confirmer, early", true, 4, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(tc.seed, 7))
			reg := revision.NewRegistry(revision.RegistryOptions{})
			keys := make([]revision.Key, 12)
			for i := range keys {
				keys[i] = revision.Key{Namespace: "ns", Name: fmt.Sprintf("r%02d", i)}
				reg.Upsert(keys[i], specFor(keys[i], 2))
			}
			var conf *toggleConfirmer
			patched, rebuilt := &stream{node: "n", early: tc.early}, &stream{node: "n", early: tc.early}
			if tc.confirm {
				conf = &toggleConfirmer{acked: map[revision.Key]uint64{}, ch: make(chan struct{})}
				patched.confirmer, rebuilt.confirmer = conf, conf
			}
			module, n := state.NewTable(0, 10), 1
			for step := range 300 {
				full := step == 0
				k := keys[rng.IntN(len(keys))]
				switch op := rng.IntN(8); {
				case full:
				case op == 0:
					reg.Delete(k)
				case op == 1:
					reg.Upsert(k, specFor(k, rng.IntN(4)))
				case op == 2:
					reg.SetInvalid(k, fmt.Errorf("bad spec"))
				case op == 3 && conf != nil:
					if r := reg.Snapshot().Get(k); r != nil {
						conf.ack(k, r.Generation)
					}
				case op == 4:
					reg.SetWakeFailure(k, &revision.WakeFailure{Reason: "ImagePull", Message: "no image"})
				case op == 5 && step%50 == 0:
					n++ // the fleet grew: slots change everywhere
				default:
					var bs []revision.Backend
					for j := range rng.IntN(4) {
						bs = append(bs, revision.Backend{Address: fmt.Sprintf("127.0.0.%d", 1+rng.IntN(5)), Port: int32(8000 + j), Ready: rng.IntN(4) > 0})
					}
					reg.SetBackends(k, bs)
				}
				snap := reg.Snapshot()
				got, _, gotHeld, err := patched.next(snap, n, 0, full)
				if err != nil {
					t.Fatal(err)
				}
				msg := rebuilt.rebuild(snap, n, 0, full)
				wantHeld := 0
				for _, h := range rebuilt.withheld {
					wantHeld += h
				}
				var want []byte
				if msg != nil {
					slices.Sort(msg.Removed)
					if want, err = json.Marshal(msg); err != nil {
						t.Fatal(err)
					}
					want = append(want, '\n')
				}
				if string(got) != string(want) || gotHeld != wantHeld {
					t.Fatalf("step %d: patched %q (withheld %d), rebuilt %q (withheld %d)", step, got, gotHeld, want, wantHeld)
				}
				if got != nil {
					u, err := state.DecodeUpdate(got)
					if err != nil {
						t.Fatalf("step %d: %v", step, err)
					}
					if err := module.Apply(u); err != nil {
						t.Fatalf("step %d: %v", step, err)
					}
				}
			}
			ref := state.NewTable(0, 10)
			u, _ := updateWith(reg.Snapshot(), n, 0, rebuilt.allow, rebuilt.early)
			if err := ref.Apply(u); err != nil {
				t.Fatal(err)
			}
			for _, k := range keys {
				if got, want := addrs(module.Lookup(k.String())), addrs(ref.Lookup(k.String())); !slices.Equal(got, want) {
					t.Errorf("%s: module holds %v after the patched messages, %v after a full update", k, got, want)
				}
			}
		})
	}
}

// TestPatchWorkIsWhatChanged: at 10,000 revisions a change to one
// revision builds that revision alone, and a revision whose backend
// waits for this node's ACK is rebuilt on each later message until the
// ACK, not every other one (counts revisions built; no time).
func TestPatchWorkIsWhatChanged(t *testing.T) {
	reg := revision.NewRegistry(revision.RegistryOptions{})
	for i := range 10_000 {
		k := revision.Key{Namespace: "ns", Name: fmt.Sprintf("r%d", i)}
		reg.Upsert(k, specFor(k, 1))
	}
	conf := &toggleConfirmer{acked: map[revision.Key]uint64{}, ch: make(chan struct{})}
	st := &stream{node: "n", confirmer: conf}
	if _, _, _, err := st.next(reg.Snapshot(), 1, 0, true); err != nil {
		t.Fatal(err)
	}
	if st.built != 10_000 {
		t.Fatalf("first message built %d revisions, want 10000", st.built)
	}
	waking := revision.Key{Namespace: "ns", Name: "r7"}
	reg.SetBackends(waking, []revision.Backend{{Address: "127.0.0.1", Port: 81, Ready: true}})
	step := func(wantHeld int, wantSent bool) {
		t.Helper()
		st.built = 0
		b, changed, held, err := st.next(reg.Snapshot(), 1, 0, false)
		if err != nil {
			t.Fatal(err)
		}
		if held != wantHeld || changed != wantSent || st.built != 1 {
			t.Fatalf("message %q: withheld %d, sent %v, built %d revisions; want withheld %d, sent %v, 1 built", b, held, changed, st.built, wantHeld, wantSent)
		}
	}
	step(1, false) // the backend waits for this node's ACK: nothing to send
	step(1, false) // an unrelated wake-up of the stream rebuilds r7 alone
	conf.ack(waking, reg.Snapshot().Get(waking).Generation)
	step(0, true) // ACKed: r7's backend is sent
	reg.Delete(waking)
	st.built = 0
	b, _, _, err := st.next(reg.Snapshot(), 1, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	u, err := state.DecodeUpdate(b)
	if err != nil || !slices.Equal(u.Removed, []string{"ns/r7"}) || len(u.Revisions) != 0 || st.built != 0 {
		t.Fatalf("deleted r7: %q (%v), built %d; want its removal alone, nothing built", b, err, st.built)
	}
}

// specFor is a valid spec for key with container concurrency cc.
func specFor(key revision.Key, cc int) revision.Spec {
	s := revision.DefaultSpec()
	s.Hosts, s.Port, s.ContainerConcurrency = []string{key.Name + ".example.com"}, 8080, cc
	return s
}
