package modsvc

import (
	"fmt"
	"testing"

	"github.com/thaw-dev/thaw/module/state"
	"github.com/thaw-dev/thaw/revision"
)

// BenchmarkStateUpdate100k: what one change costs the module's state
// stream at 100,000 revisions, every one of them idle: thaw builds and
// encodes the full update (stream.next), and the module inside Envoy
// decodes it and applies it (state.Table.Apply), as sub-benchmarks
// thaw and module. Reported: the update's bytes (docs/scaling.md, "What a virtual host costs, and 100,000 idle
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
	msg, _, _, err := st.next(snap, 1, 0)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("thaw", func(b *testing.B) {
		for b.Loop() {
			st := &stream{node: "n"}
			if _, _, _, err := st.next(snap, 1, 0); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(len(msg)), "update-bytes")
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
