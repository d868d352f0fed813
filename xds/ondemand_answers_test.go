package xds

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/zap"
)

// TestOnDemandAnchorNotCounted: with every revision idle, the first VHDS
// answer carries only the body-less anchor; thaw_xds_on_demand_answers_total
// counts what Envoys asked for, so it stays at zero for both results.
func TestOnDemandAnchorNotCounted(t *testing.T) {
	cfg := componentConfig()
	cfg.OnDemandHosts = true
	f := startFixtureOpts(t, ServerOptions{Logger: zap.NewNop(), Config: cfg}, time.Millisecond)
	loadRegistry(f.reg, idleSnapshot(3))
	c := dialDelta(t, f.addr, "anchor")
	syncAll(t, c)
	for _, result := range []string{"unknown", "found"} {
		if n := testutil.ToFloat64(f.srv.demand.answers.WithLabelValues(result)); n != 0 {
			t.Errorf("on_demand_answers_total{result=%q} = %v after the first sync, want 0 (the anchor is no answer)", result, n)
		}
	}
}
