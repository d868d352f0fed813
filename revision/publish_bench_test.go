package revision

import (
	"fmt"
	"testing"
	"time"
)

func (r *Registry) publishNow() {
	r.mu.Lock()
	r.publishLocked()
	r.mu.Unlock()
}

// BenchmarkRegistryPublish measures one publication after one revision's
// mode changed, with n revisions in the registry . It is the cost every mode flip or backend change pays
// before any reader runs.
func BenchmarkRegistryPublish(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		b.Run(fmt.Sprintf("%dk", n/1000), func(b *testing.B) {
			// A holdoff with no Run: setters only mark the registry dirty and
			// the benchmark publishes, as Run does after the holdoff.
			r := NewRegistry(RegistryOptions{Holdoff: time.Hour})
			keys := make([]Key, n)
			for i := range keys {
				keys[i] = Key{Namespace: "bench", Name: fmt.Sprintf("r%06d", i)}
				spec := validSpec()
				spec.Hosts = []string{keys[i].Name + ".example.com"}
				r.Upsert(keys[i], spec)
			}
			r.publishNow()
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				k := keys[i%n]
				r.SetMode(k, Mode(1-int(r.Snapshot().Get(k).Mode)))
				r.publishNow()
			}
		})
	}
}
