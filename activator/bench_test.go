package activator

import (
	"context"
	"fmt"
	"testing"

	"github.com/thaw-dev/thaw/revision"
)

func benchActivator(b *testing.B, cc, pods int) *Activator {
	b.Helper()
	reg := revision.NewRegistry(revision.RegistryOptions{})
	act := New(Options{})
	spec := revision.DefaultSpec()
	spec.Hosts, spec.Port, spec.ContainerConcurrency = []string{"demo.example.com"}, 8080, cc
	reg.Upsert(demo, spec)
	bs := make([]revision.Backend, pods)
	for i := range bs {
		bs[i] = revision.Backend{Address: fmt.Sprintf("127.0.1.%d", i+1), Port: 8080, Ready: true}
	}
	reg.SetBackends(demo, bs)
	reg.SetSynced()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); act.Run(ctx, reg) }()
	b.Cleanup(func() { cancel(); <-done })
	if _, err := reg.WaitFor(ctx, func(s *revision.Snapshot) bool { return s.Synced }); err != nil {
		b.Fatal(err)
	}
	for { // wait until Run applied the revision
		if held, _ := act.Stats(demo); held == 0 && act.throttler(demo) != nil && len(act.throttler(demo).state.Load().pods) == pods {
			break
		}
	}
	return act
}

// BenchmarkAcquireRelease measures activator decisions (Acquire + release of
// a warm revision) per second, in parallel, without any protocol around.
// cc=1/pods=1 has every other request wait in the queue (the slow path:
// handoff under the revision lock, wake-up by channel close).
func BenchmarkAcquireRelease(b *testing.B) {
	for _, c := range []struct{ cc, pods int }{{0, 1}, {0, 10}, {100, 10}, {1, 64}, {1, 1}} {
		b.Run(fmt.Sprintf("cc=%d/pods=%d", c.cc, c.pods), func(b *testing.B) {
			act := benchActivator(b, c.cc, c.pods)
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					_, release, err := act.Acquire(ctx, demo)
					if err != nil {
						b.Error(err)
						return
					}
					release()
				}
			})
		})
	}
}
