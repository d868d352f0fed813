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
	// A change after the first message: one revision gets a backend. The
	// stream alternates between the two snapshots, one changed revision
	// each way.
	reg.SetBackends(revision.Key{Namespace: "default", Name: "r7"},
		[]revision.Backend{{Address: "127.0.0.1", Port: 81, Ready: true}})
	snaps := []*revision.Snapshot{reg.Snapshot(), snap}
	b.Run("thaw-incremental", func(b *testing.B) {
		st := &stream{node: "n"}
		if _, _, _, err := st.next(snap, 1, 0, true); err != nil {
			b.Fatal(err)
		}
		var size int
		i := 0
		for b.Loop() {
			msg, changed, _, err := st.next(snaps[i%2], 1, 0, false)
			if err != nil || !changed {
				b.Fatalf("one revision changed: message %q, changed %v, %v", msg, changed, err)
			}
			size = len(msg)
			i++
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
