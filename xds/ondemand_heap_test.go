package xds

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/thaw-dev/thaw/revision"
	"github.com/thaw-dev/thaw/xds/internal/xdstest"
)

// idleSnapshot returns n idle revisions (proxy mode, no backend), one
// host each: the fleet of bench/scenarios' scale100k.
func idleSnapshot(n int) *revision.Snapshot {
	revs := make([]*revision.Revision, 0, n)
	for i := range n {
		revs = append(revs, xdstest.Rev(fmt.Sprintf("ns-%d", i%50), fmt.Sprintf("app-%d", i), revision.ModeProxy,
			[]string{fmt.Sprintf("app-%d.ns-%d.example.com", i, i%50)}))
	}
	return xdstest.SnapshotOf(revs...)
}

// liveHeap returns the bytes of live objects after a collection.
func liveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// BenchmarkServerLiveHeapOnDemand20k measures what the whole server keeps
// for 20,000 idle revisions with one in-process delta ADS client synced
// (as Envoy: CDS, EDS, LDS, RDS, wildcard VHDS), with virtual hosts on
// demand (translate.Config.OnDemandHosts) and without. Reported: live-MiB,
// the live heap after a collection minus that before the server started
// (the registry included); ns/op is one collection of that heap. At
// 100,000 (same code, n changed) both arms kept ~345-350 MiB: the domain
// index (~20 MiB) is offset by the virtual hosts the stream is not sent
// (docs/scaling.md, "Virtual hosts on demand").
func BenchmarkServerLiveHeapOnDemand20k(b *testing.B) {
	live := map[string]float64{}
	for _, arm := range []string{"off", "on"} {
		b.Run(arm, func(b *testing.B) {
			cfg := componentConfig()
			cfg.OnDemandHosts = arm == "on"
			base := liveHeap()
			f := startFixtureOpts(b, ServerOptions{Logger: zap.NewNop(), Config: cfg}, time.Millisecond)
			loadRegistry(f.reg, idleSnapshot(20000))
			c := dialDelta(b, f.addr, "heap")
			syncAll(b, c)
			var sum float64
			for b.Loop() {
				sum += float64(liveHeap()) - float64(base)
			}
			live[arm] = sum / float64(b.N) / (1 << 20)
			b.ReportMetric(live[arm], "live-MiB")
			runtime.KeepAlive(c)
		})
	}
	if live["off"] > 0 {
		b.Logf("live heap on/off: %.3f (%.1f / %.1f MiB)", live["on"]/live["off"], live["on"], live["off"])
	}
}
