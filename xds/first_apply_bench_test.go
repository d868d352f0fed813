package xds

import (
	"testing"

	"go.uber.org/zap"

	"github.com/thaw-dev/thaw/xds/memo"
	"github.com/thaw-dev/thaw/xds/translate"
)

// BenchmarkFirstApplyOnDemand100k measures the server's first apply (the
// one before the xDS caches open: translation, encoding, the caches'
// first contents, the domain index) of 100,000 idle revisions with the
// module activator and the idle hold path, as `thaw local` at 100k in
// bench/scenarios' scale100k; arm "on" with --on-demand-hosts, "off"
// without. One op is a fresh server's first apply.
func BenchmarkFirstApplyOnDemand100k(b *testing.B) {
	snap := idleSnapshot(100000)
	for _, arm := range []string{"on", "off"} {
		b.Run(arm, func(b *testing.B) {
			cfg := componentConfig()
			cfg.IdleHoldPath = true
			cfg.OnDemandHosts = arm == "on"
			cfg.Module = &translate.ModuleConfig{Path: "/opt/thaw/thaw-activator.so", StateURL: "http://127.0.0.1:9901/activator/v1/state",
				ReportURL: "http://127.0.0.1:9901/activator/v1/report", Node: "envoy-1"}
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				s := NewServer(ServerOptions{Config: cfg, Logger: zap.NewNop()})
				tr, err := memo.New(&s.cfg, true)
				if err != nil {
					b.Fatal(err)
				}
				s.tr = tr
				b.StartTimer()
				if err := s.apply(b.Context(), snap, true); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
