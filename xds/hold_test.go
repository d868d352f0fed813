package xds

import (
	"slices"
	"testing"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"

	"github.com/thaw-dev/thaw/revision"
	"github.com/thaw-dev/thaw/xds/translate"
)

// starting is a backend that is not ready yet: a revision with it is
// awake (it has a cluster) and its requests go to the activator.
var starting = revision.Backend{Address: "10.255.0.1", Port: 8000}

// vhostCluster decodes the one virtual host of a VHDS response and
// returns the cluster its route leads to and its x-thaw-revision value.
func vhostCluster(t *testing.T, r *discoveryv3.DeltaDiscoveryResponse) (cluster, revHeader string) {
	t.Helper()
	if len(r.GetResources()) != 1 {
		t.Fatalf("VHDS response with %d virtual hosts, want 1", len(r.GetResources()))
	}
	var vh routev3.VirtualHost
	if err := r.GetResources()[0].GetResource().UnmarshalTo(&vh); err != nil {
		t.Fatal(err)
	}
	route := vh.GetRoutes()[0]
	for _, h := range route.GetRequestHeadersToAdd() {
		if h.GetHeader().GetKey() == translate.RevisionHeader {
			if h.GetAppendAction() != 2 { // OVERWRITE_IF_EXISTS_OR_ADD: a client copy never survives
				t.Errorf("x-thaw-revision append action %v, want OVERWRITE_IF_EXISTS_OR_ADD", h.GetAppendAction())
			}
			revHeader = h.GetHeader().GetValue()
		}
	}
	return route.GetRoute().GetCluster(), revHeader
}

// TestIdleRevisionWakeAndSleep follows one revision from zero to its
// first backend and back through the server and a delta client playing
// Envoy: at zero it has no cluster and its virtual host leads to the hold
// cluster (still naming the revision in x-thaw-revision); its first
// backend brings its cluster and endpoints, and only after both are ACKed
// does the virtual host lead to them; back at zero the virtual host
// returns to the hold cluster first, and the cluster and endpoints are
// removed only after that is ACKed. Confirmation follows the resource
// that routes the revision at each step.
func TestIdleRevisionWakeAndSleep(t *testing.T) {
	cfg := componentConfig()
	cfg.IdleHoldPath = true
	f, c := startIdle(t, cfg) // a is confirmed by its virtual host

	// Waking: a first backend (starting, not ready).
	f.reg.SetBackends(keyA, []revision.Backend{starting})
	gen := generation(f, keyA)
	cds := c.recvType(resourcev3.ClusterType)
	if names := resourceNames(cds); !slices.Equal(names, []string{"rev_default_a"}) {
		t.Fatalf("CDS on wake = %v, want only the revision's cluster", names)
	}
	c.ack(cds)
	c.subscribe(resourcev3.EndpointType, "rev_default_a")
	eds := c.recvType(resourcev3.EndpointType)
	if !isProxy(cla(t, eds.GetResources()[0])) {
		t.Fatal("a starting backend's endpoints do not lead to the activator")
	}
	if f.srv.ConfirmedEverywhere(keyA, gen) {
		t.Fatal("confirmed before the endpoints were ACKed")
	}
	c.ack(eds)
	vhds := c.recvType(resourcev3.VirtualHostType)
	if cl, rh := vhostCluster(t, vhds); cl != "rev_default_a" || rh != keyA.String() {
		t.Fatalf("virtual host after the wake leads to %q naming %q, want rev_default_a naming %s", cl, rh, keyA)
	}
	c.ack(vhds)
	waitFor(t, "the awake revision confirmed", func() bool { return f.srv.ConfirmedEverywhere(keyA, gen) })

	// The backend ready, then mode flips while awake: one
	// ClusterLoadAssignment each, nothing else.
	f.reg.SetBackends(keyA, []revision.Backend{ready("10.0.0.1", 80)})
	c.ack(c.recvType(resourcev3.EndpointType))
	f.reg.SetMode(keyA, revision.ModeServe)
	c.ack(c.recvType(resourcev3.EndpointType))
	f.reg.SetMode(keyA, revision.ModeProxy)
	c.ack(c.recvType(resourcev3.EndpointType))

	// Back to zero: the virtual host first, then the removals.
	f.reg.SetBackends(keyA, nil)
	gen = generation(f, keyA)
	vhds = c.recvType(resourcev3.VirtualHostType)
	if cl, rh := vhostCluster(t, vhds); cl != translate.HoldClusterName || rh != keyA.String() {
		t.Fatalf("virtual host at zero leads to %q naming %q, want %s naming %s", cl, rh, translate.HoldClusterName, keyA)
	}
	if _, ok := f.srv.deltas[resourcev3.ClusterType].VersionsOf([]string{"rev_default_a"})["rev_default_a"]; !ok {
		t.Fatal("cluster removed before the virtual host change was ACKed")
	}
	if f.srv.ConfirmedEverywhere(keyA, gen) {
		t.Fatal("confirmed at zero before the virtual host change was ACKed")
	}
	c.ack(vhds)
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

	// A mode change at zero changes nothing in Envoy, and stays confirmed.
	before := pushedBytes(f)
	f.reg.SetMode(keyA, revision.ModeServe)
	gen = generation(f, keyA)
	waitFor(t, "the mode change at zero applied and confirmed", func() bool { return f.srv.ConfirmedEverywhere(keyA, gen) })
	if got := pushedBytes(f) - before; got != 0 {
		t.Fatalf("a mode change at zero sent %v bytes, want 0", got)
	}
}
