package xds

import (
	"slices"
	"sync"
	"testing"

	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"

	"github.com/thaw-dev/thaw/revision"
	"github.com/thaw-dev/thaw/xds/translate"
)

// moduleIdleConfig is componentConfig with the module's cluster routes
// (translate.ClusterRoutes).
func moduleIdleConfig() translate.Config {
	cfg := componentConfig()
	cfg.IdleHoldPath = true
	cfg.Module = &translate.ModuleConfig{Path: "/opt/thaw/thaw-activator.so", StateURL: "http://127.0.0.1:9901/activator/v1/state",
		ReportURL: "http://127.0.0.1:9901/activator/v1/report", Node: "envoy-1"}
	return cfg
}

// startIdle starts a fixture with cfg and revision a at zero, connects
// envoy-1 and syncs it: no assignment is sent, and a is confirmed.
func startIdle(t *testing.T, cfg translate.Config) (*fixture, *deltaClient) {
	t.Helper()
	f := startFixture(t, cfg)
	f.upsert(keyA, revision.ModeProxy, []string{"a.example.com"}) // no backend: idle
	f.reg.SetSynced()
	c := dialDelta(t, f.addr, "envoy-1")
	if eds := syncAll(t, c); len(eds) != 0 {
		t.Fatalf("EDS clusters at zero = %v, want none", eds)
	}
	waitFor(t, "the idle revision confirmed", func() bool { return f.srv.ConfirmedEverywhere(keyA, generation(f, keyA)) })
	return f, c
}

// aheadCount returns how many clusters added ahead of a first backend
// thaw_xds_wake_cluster_to_ack_seconds observed.
func aheadCount(f *fixture) uint64 { return sampleCount(f.srv.metrics.wakeClusterToAck) }

// TestModuleWakeClusterAhead: on the module's cluster routes, a revision
// at zero gets its cluster and an empty assignment as soon as the
// autoscaler wants it awake (translate.ClusterAhead), before any backend:
// that is timed in thaw_xds_wake_cluster_to_ack_seconds, not as a flip.
// Its first backend is then one ClusterLoadAssignment and nothing else
// (no cluster: recvType fails on any other type in between), timed as the
// wake's flip once ACKed. Back at zero, with no backend and a desired
// scale of 0, the cluster is removed; a desired scale of 0 alone, with a
// backend still there, keeps it.
func TestModuleWakeClusterAhead(t *testing.T) {
	f, c := startIdle(t, moduleIdleConfig())

	// The autoscaler wants it awake: the cluster goes out before a backend.
	f.reg.SetDesiredScale(keyA, 1)
	cds := c.recvType(resourcev3.ClusterType)
	if names := resourceNames(cds); !slices.Equal(names, []string{"rev_default_a"}) {
		t.Fatalf("CDS when wanted awake = %v, want the revision's cluster", names)
	}
	c.ack(cds)
	c.subscribe(resourcev3.EndpointType, "rev_default_a")
	eds := c.recvType(resourcev3.EndpointType)
	if n := len(eds.GetResources()); n != 1 {
		t.Fatalf("EDS when wanted awake: %d resources, want the (empty) assignment", n)
	}
	c.ack(eds)
	waitFor(t, "the cluster added ahead timed", func() bool { return aheadCount(f) == 1 })
	if n := flipCount(f); n != 0 {
		t.Fatalf("the cluster added ahead was timed as a flip (%d)", n)
	}

	// The first backend: one assignment, timed as the wake's flip.
	f.reg.SetBackends(keyA, []revision.Backend{ready("10.0.0.1", 80)})
	gen := generation(f, keyA)
	eds = c.recvType(resourcev3.EndpointType)
	if names := resourceNames(eds); !slices.Equal(names, []string{"rev_default_a"}) {
		t.Fatalf("EDS on the first backend = %v", names)
	}
	if f.srv.ConfirmedBy("envoy-1", keyA, gen) {
		t.Fatal("the module could be sent the backend before its endpoints were ACKed")
	}
	c.ack(eds)
	waitFor(t, "the first backend confirmed", func() bool { return f.srv.ConfirmedBy("envoy-1", keyA, gen) })
	waitFor(t, "the wake timed as a flip", func() bool { return flipCount(f) == 1 })

	// Desired 0 with the backend still there (draining): nothing goes.
	f.reg.SetDesiredScale(keyA, 0)
	// Then the backend leaves: the cluster and the assignment are removed.
	f.reg.SetBackends(keyA, nil)
	cds = c.recvType(resourcev3.ClusterType)
	if !slices.Equal(cds.GetRemovedResources(), []string{"rev_default_a"}) || len(cds.GetResources()) != 0 {
		t.Fatalf("CDS at zero: removed %v, resources %v", cds.GetRemovedResources(), resourceNames(cds))
	}
	c.ack(cds)
	waitFor(t, "the return to zero timed", func() bool { return removalCount(f) == 1 })
	c.ack(c.recvType(resourcev3.EndpointType))
	if n := aheadCount(f); n != 1 {
		t.Fatalf("thaw_xds_wake_cluster_to_ack_seconds observed %d, want 1", n)
	}
}

// TestModuleWakeClusterAheadWithoutBackend: a wake that brings no backend
// (the autoscaler gives up: desired back to 0) removes the cluster added
// ahead, and it is not timed as a return to zero twice or as a flip.
func TestModuleWakeClusterAheadWithoutBackend(t *testing.T) {
	f := startFixture(t, moduleIdleConfig())
	f.upsert(keyA, revision.ModeProxy, []string{"a.example.com"})
	f.reg.SetSynced()
	c := dialDelta(t, f.addr, "envoy-1")
	syncAll(t, c)
	f.reg.SetDesiredScale(keyA, 1)
	cds := c.recvType(resourcev3.ClusterType)
	c.ack(cds)
	c.subscribe(resourcev3.EndpointType, "rev_default_a")
	c.ack(c.recvType(resourcev3.EndpointType))
	waitFor(t, "the cluster added ahead timed", func() bool { return aheadCount(f) == 1 })

	f.reg.SetDesiredScale(keyA, 0)
	cds = c.recvType(resourcev3.ClusterType)
	if !slices.Equal(cds.GetRemovedResources(), []string{"rev_default_a"}) {
		t.Fatalf("CDS when no longer wanted: removed %v", cds.GetRemovedResources())
	}
	c.ack(cds)
	waitFor(t, "the removal timed once", func() bool { return removalCount(f) == 1 })
	c.ack(c.recvType(resourcev3.EndpointType))
	waitFor(t, "idle again, confirmed", func() bool { return f.srv.ConfirmedEverywhere(keyA, generation(f, keyA)) })
	if n := flipCount(f); n != 0 {
		t.Fatalf("flips observed %d, want 0 (no backend came)", n)
	}
}

// TestFlipsTimedBeforeTheUpdateGoesOut: every flip-to-ACK timer (a
// ClusterLoadAssignment change, a wake with its cluster) is started
// before the change reaches its cache, from where a stream sends it at
// once: an Envoy may ACK it before the applying goroutine runs again,
// and a timer started after that ACK waits for the resource's next ACK
// (seconds later), a false tail. Checked at the cache update itself.
func TestFlipsTimedBeforeTheUpdateGoesOut(t *testing.T) {
	f := startFixture(t, moduleIdleConfig())
	f.upsert(keyA, revision.ModeProxy, []string{"a.example.com"}, ready("10.0.0.1", 80))
	f.upsert(keyB, revision.ModeProxy, []string{"b.example.com"}) // idle
	var (
		mu      sync.Mutex
		missing []string
		checked int
	)
	hook := func(typeURL string, c *change) { // Run's goroutine
		if typeURL != resourcev3.EndpointType {
			return
		}
		f.srv.flipsMu.Lock()
		defer f.srv.flipsMu.Unlock()
		mu.Lock()
		defer mu.Unlock()
		for name := range c.upd {
			checked++
			if _, ok := f.srv.flips[name]; !ok {
				missing = append(missing, name)
			}
		}
	}
	f.srv.beforeUpdate.Store(&hook)
	f.reg.SetSynced()
	c := dialDelta(t, f.addr, "envoy-1")
	syncAll(t, c)
	waitFor(t, "both confirmed", func() bool {
		return f.srv.ConfirmedEverywhere(keyA, generation(f, keyA)) && f.srv.ConfirmedEverywhere(keyB, generation(f, keyB))
	})
	mu.Lock()
	checked, missing = 0, nil // the first apply times nothing
	mu.Unlock()

	f.reg.SetBackends(keyA, []revision.Backend{ready("10.0.0.1", 80), ready("10.0.0.2", 80)}) // a change
	c.ack(c.recvType(resourcev3.EndpointType))
	f.reg.SetBackends(keyB, []revision.Backend{ready("10.0.0.3", 80)}) // a wake with its cluster
	c.ack(c.recvType(resourcev3.ClusterType))
	c.subscribe(resourcev3.EndpointType, "rev_default_b")
	c.ack(c.recvType(resourcev3.EndpointType))
	waitFor(t, "both timed", func() bool { return flipCount(f) == 2 })
	mu.Lock()
	defer mu.Unlock()
	if checked != 2 || len(missing) > 0 {
		t.Fatalf("assignments updated %d times, without a flip timer for %v (want 2, none missing)", checked, missing)
	}
}
