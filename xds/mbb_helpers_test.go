package xds

import (
	"slices"
	"testing"

	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"

	"github.com/thaw-dev/thaw/revision"
)

// Make-before-break steps shared by TestServerMakeBeforeBreak (VHDS) and
// TestServerMakeBeforeBreakInlineRoutes, on revision keyC
// (c.example.com, cluster rev_default_c).

// addClusterFirst upserts keyC and checks that c is sent its cluster
// alone, then, once subscribed, its endpoints alone, and that no route to
// c.example.com exists before both are ACKed; it ACKs both.
func addClusterFirst(t *testing.T, f *fixture, c *deltaClient) {
	t.Helper()
	f.upsert(keyC, revision.ModeServe, []string{"c.example.com"}, ready("10.0.0.3", 80))
	cds := c.recvType(resourcev3.ClusterType)
	if names := resourceNames(cds); !slices.Equal(names, []string{"rev_default_c"}) {
		t.Fatalf("CDS on add = %v, want only the new cluster", names)
	}
	c.ack(cds)
	c.subscribe(resourcev3.EndpointType, "rev_default_c")
	eds := c.recvType(resourcev3.EndpointType)
	if names := resourceNames(eds); !slices.Equal(names, []string{"rev_default_c"}) {
		t.Fatalf("EDS on add = %v", names)
	}
	if routeHasHost(t, f, "c.example.com") {
		t.Fatal("route updated before the new endpoints were ACKed")
	}
	c.ack(eds)
}

// clusterRemovedAfterRoute, called once the route change removing keyC is
// ACKed, checks that c is sent the removal of rev_default_c alone, then,
// after that is ACKed, the removal of its endpoints.
func clusterRemovedAfterRoute(t *testing.T, c *deltaClient) {
	t.Helper()
	cds := c.recvType(resourcev3.ClusterType)
	if !slices.Equal(cds.GetRemovedResources(), []string{"rev_default_c"}) || len(cds.GetResources()) != 0 {
		t.Fatalf("CDS on delete: removed %v, resources %v", cds.GetRemovedResources(), resourceNames(cds))
	}
	c.ack(cds)
	eds := c.recvType(resourcev3.EndpointType)
	if !slices.Equal(eds.GetRemovedResources(), []string{"rev_default_c"}) {
		t.Fatalf("EDS on delete removed %v", eds.GetRemovedResources())
	}
}
