package xds

import (
	"slices"
	"testing"
	"time"

	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/thaw-dev/thaw/revision"
	"github.com/thaw-dev/thaw/xds/translate"
)

// TestStageTimeoutCounted: a stage that every Envoy ACKs is not counted
// in thaw_xds_stage_timeouts_total; one whose route change an Envoy never
// ACKs goes on after StageTimeout (short here; what is asserted is that
// the removal comes and is counted, not when).
func TestStageTimeoutCounted(t *testing.T) {
	cfg := componentConfig()
	cfg.StageTimeout = 200 * time.Millisecond
	f := startFixture(t, cfg)
	f.upsert(keyA, revision.ModeServe, []string{"a.example.com"}, ready("10.0.0.1", 80))
	f.reg.SetSynced()
	c := dialDelta(t, f.addr, "envoy-1")
	syncAll(t, c)

	addClusterFirst(t, f, c) // its stage ends by ACKs
	c.ack(c.recvType(resourcev3.VirtualHostType))
	if got := testutil.ToFloat64(f.srv.metrics.stageTimeouts); got != 0 {
		t.Fatalf("thaw_xds_stage_timeouts_total = %v after stages every Envoy ACKed, want 0", got)
	}

	f.reg.Delete(keyC)
	vhds := c.recvType(resourcev3.VirtualHostType) // never ACKed
	if !slices.Equal(vhds.GetRemovedResources(), []string{translate.VirtualHostName("rev_default_c")}) {
		t.Fatalf("VHDS on delete removed %v", vhds.GetRemovedResources())
	}
	cds := c.recvType(resourcev3.ClusterType)
	if !slices.Equal(cds.GetRemovedResources(), []string{"rev_default_c"}) {
		t.Fatalf("CDS after the timeout removed %v, want [rev_default_c]", cds.GetRemovedResources())
	}
	if got := testutil.ToFloat64(f.srv.metrics.stageTimeouts); got != 1 {
		t.Errorf("thaw_xds_stage_timeouts_total = %v after one timed-out stage, want 1", got)
	}
}
