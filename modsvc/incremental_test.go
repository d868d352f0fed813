package modsvc

import (
	"slices"
	"testing"
	"time"

	"github.com/thaw-dev/thaw/module/state"
	"github.com/thaw-dev/thaw/revision"
)

// TestIncrementalUpdates: a stream's first message is the full state;
// later ones carry only the revisions that changed and the keys
// removed, nothing when nothing changed, and a module applying them
// holds what a full update of the same snapshot gives it.
func TestIncrementalUpdates(t *testing.T) {
	reg := revision.NewRegistry(revision.RegistryOptions{})
	keys := []revision.Key{{Namespace: "ns", Name: "a"}, {Namespace: "ns", Name: "b"}, {Namespace: "ns", Name: "c"}}
	for _, k := range keys {
		s := revision.DefaultSpec()
		s.Hosts, s.Port = []string{k.Name + ".example.com"}, 8080
		reg.Upsert(k, s)
	}
	st := &stream{node: "n"}
	module := state.NewTable(time.Second, 10)
	send := func(full bool) *state.Update {
		t.Helper()
		b, changed, _, err := st.next(reg.Snapshot(), 1, 0, full)
		if err != nil {
			t.Fatal(err)
		}
		if !changed {
			if b != nil {
				t.Fatalf("unchanged, yet a message: %s", b)
			}
			return nil
		}
		u, err := state.DecodeUpdate(b)
		if err != nil {
			t.Fatalf("invalid update %s: %v", b, err)
		}
		if err := module.Apply(u); err != nil {
			t.Fatal(err)
		}
		return u
	}
	keysOf := func(u *state.Update) []string {
		var out []string
		for _, r := range u.Revisions {
			out = append(out, r.Key)
		}
		return out
	}

	if u := send(true); !u.Full || len(u.Revisions) != 3 {
		t.Fatalf("first message: full %v, revisions %v; want the full state of 3", u.Full, keysOf(u))
	}
	if u := send(false); u != nil {
		t.Fatalf("nothing changed, yet sent %+v", u)
	}
	reg.SetBackends(keys[1], []revision.Backend{{Address: "127.0.0.1", Port: 81, Ready: true}})
	if u := send(false); u == nil || u.Full || !slices.Equal(keysOf(u), []string{"ns/b"}) || len(u.Removed) != 0 {
		t.Fatalf("one backend added: %+v, want ns/b alone, incremental", u)
	}
	reg.Delete(keys[2])
	if u := send(false); u == nil || u.Full || len(u.Revisions) != 0 || !slices.Equal(u.Removed, []string{"ns/c"}) {
		t.Fatalf("ns/c deleted: %+v, want only its removal", u)
	}
	// The module now holds what one full update would give it.
	full := state.NewTable(time.Second, 10)
	if err := full.Apply(Update(reg.Snapshot(), 1, 0)); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"ns/a", "ns/b", "ns/c"} {
		got, want := addrs(module.Lookup(k)), addrs(full.Lookup(k))
		if !slices.Equal(got, want) {
			t.Errorf("%s: backends %v after the incremental updates, %v after a full one", k, got, want)
		}
	}
	if got := addrs(module.Lookup("ns/b")); !slices.Equal(got, []string{"127.0.0.1:81"}) {
		t.Errorf("ns/b: %v, want [127.0.0.1:81]", got)
	}
	// A full message again (a deferred first update computed twice)
	// resets the baseline: the next change is measured against it.
	send(true)
	reg.SetBackends(keys[0], []revision.Backend{{Address: "127.0.0.2", Port: 82, Ready: true}})
	if u := send(false); u == nil || !slices.Equal(keysOf(u), []string{"ns/a"}) {
		t.Fatalf("after a second full message, one change: %+v, want ns/a alone", u)
	}
}

// addrs returns a module revision's backends, nil for none (or no
// revision).
func addrs(r *state.Revision) []string {
	if r == nil {
		return nil
	}
	var out []string
	for _, b := range r.Backends() {
		out = append(out, b.Addr)
	}
	return out
}
