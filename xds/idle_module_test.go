package xds

import (
	"slices"
	"testing"

	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	dto "github.com/prometheus/client_model/go"

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
// (ConfirmedBy), and the wake is timed as a flip of the new assignment.
func TestModuleIdleWakeAndSleepKeepsRoutes(t *testing.T) {
	cfg := componentConfig()
	cfg.IdleHoldPath = true
	cfg.Module = &translate.ModuleConfig{Path: "/opt/thaw/thaw-activator.so", StateURL: "http://127.0.0.1:9901/activator/v1/state",
		ReportURL: "http://127.0.0.1:9901/activator/v1/report", Node: "envoy-1"}
	f := startFixture(t, cfg)
	f.upsert(keyA, revision.ModeProxy, []string{"a.example.com"}) // no backend: idle
	f.reg.SetSynced()
	c := dialDelta(t, f.addr, "envoy-1")
	if eds := syncAll(t, c); len(eds) != 0 {
		t.Fatalf("EDS clusters at zero = %v, want none", eds)
	}
	waitFor(t, "the idle revision confirmed", func() bool { return f.srv.ConfirmedEverywhere(keyA, generation(f, keyA)) })

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
	c.ack(cds)
	eds = c.recvType(resourcev3.EndpointType)
	if !slices.Equal(eds.GetRemovedResources(), []string{"rev_default_a"}) {
		t.Fatalf("EDS at zero removed %v", eds.GetRemovedResources())
	}
	c.ack(eds)
	waitFor(t, "the idle revision confirmed again", func() bool { return f.srv.ConfirmedEverywhere(keyA, gen) })
}

// flipCount returns how many flips thaw_xds_flip_to_ack_seconds observed.
func flipCount(f *fixture) uint64 {
	var m dto.Metric
	if err := f.srv.metrics.flipToAck.Write(&m); err != nil {
		return 0
	}
	return m.GetHistogram().GetSampleCount()
}
