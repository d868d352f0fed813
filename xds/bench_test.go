package xds

import (
	"fmt"
	"testing"

	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"

	"github.com/thaw-dev/thaw/revision"
)

// benchSnapshot returns n revisions, half in serve mode with two ready
// backends, half in proxy mode.
func benchSnapshot(n int) *revision.Snapshot {
	revs := make([]*revision.Revision, 0, n)
	for i := range n {
		mode := revision.ModeProxy
		var bs []revision.Backend
		if i%2 == 0 {
			mode = revision.ModeServe
			bs = []revision.Backend{ready(fmt.Sprintf("10.%d.%d.1", i/256%256, i%256), 8080), ready(fmt.Sprintf("10.%d.%d.2", i/256%256, i%256), 8080)}
		}
		revs = append(revs, rev(fmt.Sprintf("ns-%d", i%50), fmt.Sprintf("app-%d", i), mode,
			[]string{fmt.Sprintf("app-%d.ns-%d.example.com", i, i%50)}, bs...))
	}
	return snapshotOf(revs...)
}

// benchRegistry returns a synced registry (holdoff 0) holding the
// revisions of benchSnapshot(n), so that benchmarks get the snapshots
// production gets (shared maps, the log behind Snapshot.Changes).
func benchRegistry(n int) *revision.Registry {
	reg := revision.NewRegistry(revision.RegistryOptions{})
	loadRegistry(reg, benchSnapshot(n))
	return reg
}

// loadRegistry puts snap's revisions (spec, backends, mode) into reg and
// marks it synced.
func loadRegistry(reg *revision.Registry, snap *revision.Snapshot) {
	for _, r := range snap.Sorted() {
		reg.Upsert(r.Key, r.Spec)
		reg.SetBackends(r.Key, r.Backends)
		reg.SetMode(r.Key, r.Mode)
	}
	reg.SetSynced()
}

// BenchmarkTranslate10k measures one full translation of 10,000 revisions.
func BenchmarkTranslate10k(b *testing.B) {
	snap := benchSnapshot(10000)
	cfg := testConfig()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Translate(snap, cfg); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTranslateFlip10k measures the server's incremental translation
// of one mode flip among 10,000 revisions.
func BenchmarkTranslateFlip10k(b *testing.B) {
	reg := benchRegistry(10000)
	cfg := testConfig()
	tr, err := newTranslator(&cfg)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := tr.translate(reg.Snapshot()); err != nil {
		b.Fatal(err)
	}
	key := revision.Key{Namespace: "ns-0", Name: "app-0"}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		reg.SetMode(key, revision.Mode(i%2))
		if _, err := tr.translate(reg.Snapshot()); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkServerApplyFlip10k measures the server's handling of one mode
// flip among 10,000 revisions (fast path: compare, build one
// ClusterLoadAssignment, one cache update), without streams.
func BenchmarkServerApplyFlip10k(b *testing.B) {
	reg := benchRegistry(10000)
	cfg := testConfig()
	s := NewServer(ServerOptions{Config: cfg})
	tr, err := newTranslator(&s.cfg)
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
