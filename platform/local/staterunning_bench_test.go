package local

import (
	"fmt"
	"testing"

	"go.uber.org/zap"

	"github.com/thaw-dev/thaw/revision"
)

// BenchmarkSaveState is one recording of the running processes (it runs
// on every process start and exit, under the platform's lock, before a
// new process's first readiness probe) with one process running among
// idle revisions.
func BenchmarkSaveState(b *testing.B) {
	for _, n := range []int{1000, 100_000} {
		b.Run(fmt.Sprintf("revisions=%d", n), func(b *testing.B) {
			revs, dir := make([]RevisionConfig, n), b.TempDir()
			for i := range revs {
				revs[i] = workloadRevIn(fmt.Sprintf("r%06d", i), dir, nil)
			}
			reg := revision.NewRegistry(revision.RegistryOptions{})
			p := New(Options{Logger: zap.NewNop(), Registry: reg, Config: configOf(revs...)})
			p.store = &stateStore{dir: b.TempDir()}
			rs := p.revMap()[revs[0].Key]
			in := newInstance(p, rs, 1)
			in.proc = &process{pid: 1, port: 1, argv: []string{workloadBin}}
			rs.instances = append(rs.instances, in)
			p.running[in] = struct{}{}
			b.ReportAllocs()
			for b.Loop() {
				p.mu.Lock()
				p.saveStateLocked()
				p.mu.Unlock()
			}
		})
	}
}
