package xds

import (
	"slices"
	"testing"
	"time"

	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"go.uber.org/zap/zaptest"

	"github.com/thaw-dev/thaw/revision"
	"github.com/thaw-dev/thaw/xds/translate"
)

// TestModuleIdleWakeAndSleepKeepsRoutes follows one revision from zero to
// its first backend and back with the module's cluster routes
// (translate.ClusterRoutes): at zero it has no cluster; the wake sends
// its cluster and then its endpoints and no virtual host; back at zero
// the cluster and the endpoints are removed, again without any virtual
// host: Envoy never rebuilds its route table for either. The module is
// sent the backend only once the endpoints listing it were ACKed
// (ConfirmedBy), the wake is timed as a flip of the new assignment, and
// the return to zero as a removal (thaw_xds_removal_to_ack_seconds) once
// the cluster's removal is ACKed.
func TestModuleIdleWakeAndSleepKeepsRoutes(t *testing.T) {
	f, c := startIdle(t, moduleIdleConfig())

	// Waking: the cluster, then its endpoints; no virtual host follows.
	f.reg.SetBackends(keyA, []revision.Backend{ready("10.0.0.1", 80)})
	gen := generation(f, keyA)
	cds := c.recvType(resourcev3.ClusterType)
	if names := resourceNames(cds); !slices.Equal(names, []string{"rev_default_a"}) {
		t.Fatalf("CDS on wake = %v, want only the revision's cluster", names)
	}
	c.ack(cds)
	c.subscribe(resourcev3.EndpointType, "rev_default_a")
	eds := c.recvType(resourcev3.EndpointType)
	if f.srv.ConfirmedBy("envoy-1", keyA, gen) {
		t.Fatal("the module could be sent the backend before its endpoints were ACKed")
	}
	c.ack(eds)
	waitFor(t, "the woken revision's endpoints confirmed", func() bool { return f.srv.ConfirmedBy("envoy-1", keyA, gen) })
	waitFor(t, "the wake timed as a flip", func() bool { return flipCount(f) >= 1 })

	// A second backend while awake: one ClusterLoadAssignment (recvType
	// fails on a virtual host pushed in between).
	f.reg.SetBackends(keyA, []revision.Backend{ready("10.0.0.1", 80), ready("10.0.0.2", 80)})
	c.ack(c.recvType(resourcev3.EndpointType))

	// Back to zero: the removals at once, no virtual host.
	f.reg.SetBackends(keyA, nil)
	gen = generation(f, keyA)
	cds = c.recvType(resourcev3.ClusterType)
	if !slices.Equal(cds.GetRemovedResources(), []string{"rev_default_a"}) || len(cds.GetResources()) != 0 {
		t.Fatalf("CDS at zero: removed %v, resources %v", cds.GetRemovedResources(), resourceNames(cds))
	}
	if n := removalCount(f); n != 0 {
		t.Fatalf("the return to zero was timed (%d) before Envoy ACKed the removal", n)
	}
	c.ack(cds)
	waitFor(t, "the return to zero timed as a removal flip", func() bool { return removalCount(f) == 1 })
	eds = c.recvType(resourcev3.EndpointType)
	if !slices.Equal(eds.GetRemovedResources(), []string{"rev_default_a"}) {
		t.Fatalf("EDS at zero removed %v", eds.GetRemovedResources())
	}
	c.ack(eds)
	waitFor(t, "the idle revision confirmed again", func() bool { return f.srv.ConfirmedEverywhere(keyA, gen) })
}

// flipCount returns how many flips thaw_xds_flip_to_ack_seconds observed.
func flipCount(f *fixture) uint64 { return sampleCount(f.srv.metrics.flipToAck) }

// removalCount returns how many returns to zero
// thaw_xds_removal_to_ack_seconds observed.
func removalCount(f *fixture) uint64 { return sampleCount(f.srv.metrics.removalToAck) }

// sampleCount returns how many samples histogram h observed (0 when it
// cannot be read, so a waitFor on it keeps waiting).
func sampleCount(h prometheus.Histogram) uint64 {
	var m dto.Metric
	if err := h.Write(&m); err != nil {
		return 0
	}
	return m.GetHistogram().GetSampleCount()
}

// TestModuleIdleRemovalUnackedNotTimed: a return to zero whose cluster
// removal the only Envoy never ACKs (its stream closes first) is not
// observed in thaw_xds_removal_to_ack_seconds, and the pending flip is
// dropped, so the next wake and return to zero are timed normally.
func TestModuleIdleRemovalUnackedNotTimed(t *testing.T) {
	cfg := componentConfig()
	cfg.IdleHoldPath = true
	cfg.Module = &translate.ModuleConfig{Path: "/opt/thaw/thaw-activator.so", StateURL: "http://127.0.0.1:9901/activator/v1/state",
		ReportURL: "http://127.0.0.1:9901/activator/v1/report", Node: "envoy-1"}
	f := startFixture(t, cfg)
	f.upsert(keyA, revision.ModeProxy, []string{"a.example.com"})
	f.reg.SetBackends(keyA, []revision.Backend{ready("10.0.0.1", 80)})
	f.reg.SetSynced()
	c := dialDelta(t, f.addr, "envoy-1")
	syncAll(t, c)
	waitFor(t, "the awake revision confirmed", func() bool { return f.srv.ConfirmedEverywhere(keyA, generation(f, keyA)) })

	f.reg.SetBackends(keyA, nil)
	cds := c.recvType(resourcev3.ClusterType)
	if !slices.Equal(cds.GetRemovedResources(), []string{"rev_default_a"}) {
		t.Fatalf("CDS at zero removed %v", cds.GetRemovedResources())
	}
	f.srv.flipsMu.Lock()
	pending := f.srv.flips["rev_default_a"]
	f.srv.flipsMu.Unlock()
	if !pending.removal {
		t.Fatalf("no removal flip pending for the cluster removal sent: %+v", pending)
	}
	c.cancel() // closes without ACKing the removal
	waitFor(t, "the pending removal flip dropped", func() bool {
		f.srv.flipsMu.Lock()
		defer f.srv.flipsMu.Unlock()
		_, ok := f.srv.flips["rev_default_a"]
		return !ok
	})
	if n := removalCount(f); n != 0 {
		t.Fatalf("an unACKed removal was timed (%d observations)", n)
	}
}

// TestModuleIdleSleepTimedOnFullApply: a return to zero that reaches the
// xDS server together with another revision's deletion (one snapshot,
// through the registry's holdoff) goes through a full apply, not the fast
// path; it is timed all the same once Envoy ACKs the removal, and the
// deleted revision's cluster removal is not (it is no return to zero).
func TestModuleIdleSleepTimedOnFullApply(t *testing.T) {
	cfg := componentConfig()
	cfg.IdleHoldPath = true
	cfg.Module = &translate.ModuleConfig{Path: "/opt/thaw/thaw-activator.so", StateURL: "http://127.0.0.1:9901/activator/v1/state",
		ReportURL: "http://127.0.0.1:9901/activator/v1/report", Node: "envoy-1"}
	f := startFixtureWith(t, cfg, zaptest.NewLogger(t), 200*time.Millisecond)
	f.upsert(keyA, revision.ModeServe, []string{"a.example.com"}, ready("10.0.0.1", 80))
	f.upsert(keyB, revision.ModeServe, []string{"b.example.com"}, ready("10.0.0.2", 80))
	f.reg.SetSynced()
	c := dialDelta(t, f.addr, "envoy-1")
	if eds := syncAll(t, c); !slices.Equal(eds, []string{"rev_default_a", "rev_default_b"}) {
		t.Fatalf("EDS clusters = %v", eds)
	}
	waitFor(t, "both revisions confirmed", func() bool {
		return f.srv.ConfirmedEverywhere(keyA, generation(f, keyA)) && f.srv.ConfirmedEverywhere(keyB, generation(f, keyB))
	})

	f.reg.Delete(keyB)
	f.reg.SetBackends(keyA, nil)
	vhds := c.recvType(resourcev3.VirtualHostType) // b's virtual host goes first
	if !slices.Equal(vhds.GetRemovedResources(), []string{translate.VirtualHostName("rev_default_b")}) {
		t.Fatalf("VHDS removed %v, want b's virtual host", vhds.GetRemovedResources())
	}
	c.ack(vhds)
	cds := c.recvType(resourcev3.ClusterType)
	removed := slices.Sorted(slices.Values(cds.GetRemovedResources()))
	if !slices.Equal(removed, []string{"rev_default_a", "rev_default_b"}) {
		t.Fatalf("CDS removed %v, want both clusters in one response (one full apply)", removed)
	}
	if n := removalCount(f); n != 0 {
		t.Fatalf("timed (%d) before Envoy ACKed the removal", n)
	}
	c.ack(cds)
	waitFor(t, "a's return to zero timed", func() bool { return removalCount(f) >= 1 })
	c.ack(c.recvType(resourcev3.EndpointType))
	if n := removalCount(f); n != 1 {
		t.Fatalf("thaw_xds_removal_to_ack_seconds observed %d removals, want 1 (a's; b was deleted)", n)
	}
}
