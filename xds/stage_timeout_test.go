package xds

import (
	"slices"
	"testing"
	"time"

	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/zap/zaptest"
	clocktesting "k8s.io/utils/clock/testing"

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

// TestStageAckBeforeWait: an ACK that lands after Run sent a change and
// set its stage but before Run waits (a busy machine) still ends the
// stage. Run is held, before it waits, until the stage is met; the stage
// timeout is an hour on a clock that never moves, so only the ACK's
// notification can end it: when Run took that notification's channel
// after the ACK, the next step never came.
func TestStageAckBeforeWait(t *testing.T) {
	cfg := componentConfig()
	cfg.StageTimeout = time.Hour
	clk := clocktesting.NewFakeClock(time.Now())
	f := startFixtureOpts(t, ServerOptions{Logger: zaptest.NewLogger(t), Config: cfg, Clock: clk}, 0)
	f.upsert(keyA, revision.ModeServe, []string{"a.example.com"}, ready("10.0.0.1", 80))
	f.reg.SetSynced()
	c := dialDelta(t, f.addr, "envoy-1")
	syncAll(t, c)

	hold := func() {
		// Run's goroutine: s.stage is Run's own.
		for i := 0; i < 500 && f.srv.stage != nil && !f.srv.stageReady(); i++ {
			time.Sleep(10 * time.Millisecond)
		}
	}
	f.srv.beforeWait.Store(&hold)
	addClusterFirst(t, f, c) // the stage waits for these ACKs
	vhds := c.recvType(resourcev3.VirtualHostType)
	if names := resourceNames(vhds); !slices.Equal(names, []string{translate.VirtualHostName("rev_default_c")}) {
		t.Fatalf("VHDS after the cluster's stage = %v, want c's virtual host", names)
	}
	if got := testutil.ToFloat64(f.srv.metrics.stageTimeouts); got != 0 {
		t.Errorf("thaw_xds_stage_timeouts_total = %v, want 0 (the clock never moved)", got)
	}
}
