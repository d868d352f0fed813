package xds

import (
	"testing"

	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"

	"github.com/thaw-dev/thaw/revision"
	"github.com/thaw-dev/thaw/xds/memo"
)

// BenchmarkServerApplyFlip10k measures the server's handling of one mode
// flip among 10,000 revisions (fast path: compare, build one
// ClusterLoadAssignment, one cache update), without streams.
func BenchmarkServerApplyFlip10k(b *testing.B) {
	reg := benchRegistry(10000)
	cfg := testConfig()
	s := NewServer(ServerOptions{Config: cfg})
	tr, err := memo.New(&s.cfg, true)
	if err != nil {
		b.Fatal(err)
	}
	s.tr = tr
	ctx := b.Context()
	if err := s.apply(ctx, reg.Snapshot(), true); err != nil {
		b.Fatal(err)
	}
	key := revision.Key{Namespace: "ns-0", Name: "app-0"}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		reg.SetMode(key, revision.Mode(i%2)) // app-0 starts in serve mode
		if err := s.apply(ctx, reg.Snapshot(), false); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkServerFlipDelta10k measures one mode flip among 10,000
// revisions through the whole server: snapshot applied, CLA pushed to an
// in-process delta ADS client subscribed to all 10,000 CLAs, ACKed,
// ConfirmedEverywhere true.
func BenchmarkServerFlipDelta10k(b *testing.B) {
	f := startBenchFixture(b)
	loadRegistry(f.reg, benchSnapshot(10000))
	c := dialDelta(b, f.addr, "bench")
	syncAll(b, c)
	key := revision.Key{Namespace: "ns-0", Name: "app-0"}
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		mode := revision.Mode(i % 2) // app-0 starts in serve mode
		f.reg.SetMode(key, mode)
		snap, err := f.reg.WaitFor(b.Context(), func(s *revision.Snapshot) bool { return s.Get(key).Mode == mode })
		if err != nil {
			b.Fatal(err)
		}
		gen := snap.Get(key).Generation
		c.ack(c.recvType(resourcev3.EndpointType))
		if err := f.srv.WaitConfirmed(b.Context(), key, gen); err != nil {
			b.Fatal(err)
		}
	}
}
