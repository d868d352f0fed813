package xds

import (
	"strings"
	"testing"

	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"

	"github.com/thaw-dev/thaw/revision"
)

// TestServerMakeBeforeBreakInlineRoutes: with Config.InlineRoutes the
// route configuration carries the hosts; it changes only after the new
// cluster and endpoints are ACKed, and clusters go only after it is.
func TestServerMakeBeforeBreakInlineRoutes(t *testing.T) {
	cfg := componentConfig()
	cfg.InlineRoutes = true
	f := startFixture(t, cfg)
	f.upsert(keyA, revision.ModeServe, []string{"a.example.com"}, ready("10.0.0.1", 80))
	f.reg.SetSynced()
	c := dialDelta(t, f.addr, "envoy-1")
	syncAll(t, c)

	// Adding a revision: cluster first, then its endpoints, and the route
	// only after both are ACKed.
	addClusterFirst(t, f, c)
	rds := c.recvType(resourcev3.RouteType)
	if !strings.Contains(rds.GetResources()[0].GetResource().String(), "c.example.com") {
		t.Fatal("RDS after ACK lacks the new host")
	}
	c.ack(rds)

	// Removing a revision: route first; cluster and endpoints only after
	// the route is ACKed.
	f.reg.Delete(keyC)
	rds = c.recvType(resourcev3.RouteType)
	if strings.Contains(rds.GetResources()[0].GetResource().String(), "c.example.com") {
		t.Fatal("RDS on delete still has the host")
	}
	if len(messages(f.srv.deltas[resourcev3.ClusterType])) != 3 {
		t.Fatal("cluster removed before the route change was ACKed")
	}
	c.ack(rds)
	clusterRemovedAfterRoute(t, c)
}
