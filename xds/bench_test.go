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
	snap := benchSnapshot(10000)
	cfg := testConfig()
	tr, err := newTranslator(&cfg)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := tr.translate(snap); err != nil {
		b.Fatal(err)
	}
	key := revision.Key{Namespace: "ns-0", Name: "app-0"}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		r := *snap.Revisions[key]
		r.Mode = revision.Mode(i % 2)
		r.Generation++
		snap.Revisions[key] = &r
		if _, err := tr.translate(snap); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkServerApplyFlip10k measures the server's handling of one mode
// flip among 10,000 revisions (fast path: compare, build one
// ClusterLoadAssignment, one cache update), without streams.
func BenchmarkServerApplyFlip10k(b *testing.B) {
	snap := benchSnapshot(10000)
	cfg := testConfig()
	s := NewServer(ServerOptions{Config: cfg})
	tr, err := newTranslator(&s.cfg)
	if err != nil {
		b.Fatal(err)
	}
	s.tr = tr
	ctx := b.Context()
	if err := s.apply(ctx, snap, true); err != nil {
		b.Fatal(err)
	}
	key := revision.Key{Namespace: "ns-0", Name: "app-0"}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		next := &revision.Snapshot{Version: snap.Version + 1, Synced: true, Revisions: make(map[revision.Key]*revision.Revision, len(snap.Revisions))}
		for k, r := range snap.Revisions {
			next.Revisions[k] = r
		}
		r := *snap.Revisions[key]
		r.Mode = revision.Mode(i % 2)
		r.Generation++
		next.Revisions[key] = &r
		snap = next
		if err := s.apply(ctx, snap, false); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkServerFlipDelta10k measures one mode flip among 10,000
// revisions through the whole server: snapshot applied, CLA pushed to an
// in-process delta ADS client subscribed to all 10,000 CLAs, ACKed,
// ConfirmedEverywhere true.
func BenchmarkServerFlipDelta10k(b *testing.B) {
	snap := benchSnapshot(10000)
	f := startBenchFixture(b)
	for k, r := range snap.Revisions {
		f.reg.Upsert(k, r.Spec)
		f.reg.SetBackends(k, r.Backends)
		f.reg.SetMode(k, r.Mode)
	}
	f.reg.SetSynced()
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
