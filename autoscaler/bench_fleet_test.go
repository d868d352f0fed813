package autoscaler_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"go.uber.org/zap"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/thaw-dev/thaw/platform/local"
	"github.com/thaw-dev/thaw/revision"
)

// benchFleet is the fleet the tick benchmarks decide: n revisions
// "bench/rev-NNNNNN" (default spec, one host each) in a real registry
// (5 ms holdoff, synced) and the local platform, one in every loadEvery
// recorded at 3 replicas (applied when the platform runs, never here).
type benchFleet struct {
	start  time.Time
	clk    *testingclock.FakeClock
	reg    *revision.Registry
	plat   *local.Platform
	keys   []revision.Key
	loaded []bool // keys[i] has replicas (and, in the benchmarks, load)
}

// newBenchFleet builds a benchFleet whose registry runs until ctx ends;
// tune, when given, edits every revision's spec.
func newBenchFleet(ctx context.Context, b *testing.B, n, loadEvery int, tune ...func(*revision.Spec)) *benchFleet {
	b.Helper()
	f := &benchFleet{start: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC),
		keys: make([]revision.Key, n), loaded: make([]bool, n)}
	f.clk = testingclock.NewFakeClock(f.start)
	f.reg = revision.NewRegistry(revision.RegistryOptions{Holdoff: 5 * time.Millisecond})
	go f.reg.Run(ctx)
	cfg := &local.Config{Revisions: make([]local.RevisionConfig, n)}
	for i := range f.keys {
		k := revision.Key{Namespace: "bench", Name: fmt.Sprintf("rev-%06d", i)}
		spec := revision.DefaultSpec()
		spec.Hosts = []string{k.Name + ".example.com"}
		for _, fn := range tune {
			fn(&spec)
		}
		f.keys[i], f.loaded[i] = k, i%loadEvery == 0
		cfg.Revisions[i] = local.RevisionConfig{Key: k, Spec: spec}
		f.reg.Upsert(k, spec)
	}
	f.reg.SetSynced()
	f.plat = local.New(local.Options{Logger: zap.NewNop(), Registry: f.reg, Config: cfg})
	for i, k := range f.keys {
		if f.loaded[i] {
			if err := f.plat.SetScale(ctx, k, 3); err != nil {
				b.Fatal(err)
			}
		}
	}
	return f
}
