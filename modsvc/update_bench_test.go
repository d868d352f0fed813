package modsvc

import (
	"fmt"
	"testing"

	"github.com/thaw-dev/thaw/module/state"
	"github.com/thaw-dev/thaw/revision"
)

// BenchmarkStateUpdate100k: what the module's state stream costs at
// 100,000 revisions, every one of them idle: thaw builds and encodes the
// full update (a stream's first message) (stream.next), and the module inside Envoy
// decodes it and applies it (state.Table.Apply), as sub-benchmarks
// thaw and module; thaw-incremental is a later message after one
// revision changed (incremental.go). Reported: the update's bytes (docs/scaling.md, "What a virtual host costs, and 100,000 idle
// revisions").
func BenchmarkStateUpdate100k(b *testing.B) {
	reg := revision.NewRegistry(revision.RegistryOptions{})
	for i := range 100_000 {
		s := revision.DefaultSpec()
		s.Hosts, s.Port = []string{fmt.Sprintf("r%d.example.com", i)}, 8080
		reg.Upsert(revision.Key{Namespace: "default", Name: fmt.Sprintf("r%d", i)}, s)
	}
	snap := reg.Snapshot()
	if n := snap.Revisions.Len(); n != 100_000 {
		b.Fatalf("registry holds %d revisions", n)
	}
	st := &stream{node: "n"}
	msg, _, _, err := st.next(snap, 1, 0, true)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("thaw", func(b *testing.B) {
		for b.Loop() {
			st := &stream{node: "n"}
			if _, _, _, err := st.next(snap, 1, 0, true); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(len(msg)), "update-bytes")
	})
	// A change after the first message: one revision gets or loses its
	// backend, a registry publication each time (a stream patches
	// forward from the snapshot it last handled, perchange.go).
	key := revision.Key{Namespace: "default", Name: "r7"}
	b.Run("thaw-incremental", func(b *testing.B) {
		st := &stream{node: "n"}
		if _, _, _, err := st.next(reg.Snapshot(), 1, 0, true); err != nil {
			b.Fatal(err)
		}
		var size int
		for b.Loop() {
			var bs []revision.Backend
			if len(reg.Snapshot().Get(key).Backends) == 0 {
				bs = []revision.Backend{{Address: "127.0.0.1", Port: 81, Ready: true}}
			}
			reg.SetBackends(key, bs)
			msg, changed, _, err := st.next(reg.Snapshot(), 1, 0, false)
			if err != nil || !changed {
				b.Fatalf("one revision changed: message %q, changed %v, %v", msg, changed, err)
			}
			size = len(msg)
		}
		b.ReportMetric(float64(size), "update-bytes")
	})
	b.Run("module", func(b *testing.B) {
		table := state.NewTable(0, 1)
		for b.Loop() {
			u, err := state.DecodeUpdate(msg)
			if err != nil {
				b.Fatal(err)
			}
			if err := table.Apply(u); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkStateChange: what one registry change costs a module's state
// stream at 1,000, 10,000 and 100,000 idle revisions: the registry
// publishes a snapshot in which one revision gained or lost its backend,
// and the stream builds and encodes the message for it (stream.next).
// patch is the production path (perchange.go); rebuild translates every
// revision each time, as before, for the ratio. Compare each path's
// ns/op across sizes: patch stays flat, rebuild grows with the
// revisions (docs/scaling.md).
func BenchmarkStateChange(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 100_000} {
		reg := revision.NewRegistry(revision.RegistryOptions{})
		for i := range n {
			s := revision.DefaultSpec()
			s.Hosts, s.Port = []string{fmt.Sprintf("r%d.example.com", i)}, 8080
			reg.Upsert(revision.Key{Namespace: "default", Name: fmt.Sprintf("r%d", i)}, s)
		}
		key := revision.Key{Namespace: "default", Name: "r7"}
		for _, path := range []string{"patch", "rebuild"} {
			b.Run(fmt.Sprintf("%s/revisions=%d", path, n), func(b *testing.B) {
				st := &stream{node: "n"}
				if _, _, _, err := st.next(reg.Snapshot(), 1, 0, true); err != nil {
					b.Fatal(err)
				}
				for b.Loop() {
					var bs []revision.Backend
					if len(reg.Snapshot().Get(key).Backends) == 0 {
						bs = []revision.Backend{{Address: "127.0.0.1", Port: 81, Ready: true}}
					}
					reg.SetBackends(key, bs)
					snap := reg.Snapshot()
					var msg *state.Update
					if path == "patch" {
						msg = st.patch(snap)
					} else {
						msg = st.rebuild(snap, 1, 0, false)
					}
					if msg == nil || len(msg.Revisions) != 1 {
						b.Fatalf("one revision changed: message %+v", msg)
					}
				}
			})
		}
	}
}
