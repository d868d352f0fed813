package xds

import (
	"context"
	"slices"
	"strings"
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"

	"github.com/thaw-dev/thaw/revision"
	"github.com/thaw-dev/thaw/xds/translate"
)

var (
	keyA = revision.Key{Namespace: "default", Name: "a"}
	keyB = revision.Key{Namespace: "default", Name: "b"}
	keyC = revision.Key{Namespace: "default", Name: "c"}
)

func componentConfig() translate.Config {
	cfg := testConfig()
	// Long enough that a make-before-break stage never times out in a
	// test: every stage here ends by an ACK.
	cfg.StageTimeout = waitLimit * 2
	return cfg
}

// syncAll plays Envoy's startup: CDS, EDS for every EDS cluster, LDS, RDS,
// ACKing each. It returns the EDS cluster names.
func syncAll(t testing.TB, c *deltaClient) []string {
	t.Helper()
	c.subscribe(resourcev3.ClusterType)
	cds := c.recvType(resourcev3.ClusterType)
	c.ack(cds)
	var eds []string
	for _, r := range cds.GetResources() {
		var cl clusterv3.Cluster
		if err := r.GetResource().UnmarshalTo(&cl); err != nil {
			t.Fatal(err)
		}
		if cl.GetType() == clusterv3.Cluster_EDS {
			eds = append(eds, cl.GetName())
		}
	}
	slices.Sort(eds)
	if len(eds) > 0 {
		c.subscribe(resourcev3.EndpointType, eds...)
		c.ack(c.recvType(resourcev3.EndpointType))
	}
	syncListeners(c)
	return eds
}

// dialSyncedPair opens the delta ADS streams of nodes envoy-1 and envoy-2
// on the server at addr, then brings each to a full sync (syncAll).
func dialSyncedPair(t testing.TB, addr string) (c1, c2 *deltaClient) {
	t.Helper()
	c1, c2 = dialDelta(t, addr, "envoy-1"), dialDelta(t, addr, "envoy-2")
	syncAll(t, c1)
	syncAll(t, c2)
	return c1, c2
}

// syncListeners subscribes to and ACKs, in Envoy's order, the listeners,
// thaw_http's route configuration and its virtual hosts.
func syncListeners(c *deltaClient) {
	c.t.Helper()
	c.subscribe(resourcev3.ListenerType)
	c.ack(c.recvType(resourcev3.ListenerType))
	c.subscribe(resourcev3.RouteType, translate.HTTPListenerName)
	c.ack(c.recvType(resourcev3.RouteType))
	// Envoy subscribes to thaw_http's virtual hosts (VHDS, wildcard) once
	// it has the route configuration.
	c.subscribe(resourcev3.VirtualHostType)
	c.ack(c.recvType(resourcev3.VirtualHostType))
}

func cla(t testing.TB, r *discoveryv3.Resource) *endpointv3.ClusterLoadAssignment {
	t.Helper()
	var out endpointv3.ClusterLoadAssignment
	if err := r.GetResource().UnmarshalTo(&out); err != nil {
		t.Fatal(err)
	}
	return &out
}

// isProxy reports whether c routes to the activator first: the activator
// endpoint alone at priority 0 (ready backends may follow at priority 1).
func isProxy(c *endpointv3.ClusterLoadAssignment) bool {
	eps := c.GetEndpoints()
	if len(eps) == 0 || len(eps) > 2 || eps[0].GetPriority() != 0 || len(eps[0].GetLbEndpoints()) != 1 {
		return false
	}
	if len(eps) == 2 && eps[1].GetPriority() != 1 {
		return false
	}
	return eps[0].GetLbEndpoints()[0].GetEndpoint().GetAddress().GetEnvoyInternalAddress().GetServerListenerName() == translate.ActivatorListenerName
}

func generation(f *fixture, k revision.Key) uint64 { return f.reg.Snapshot().Get(k).Generation }

func TestServerHoldsStreamsUntilSynced(t *testing.T) {
	f := startFixture(t, componentConfig())
	f.upsert(keyA, revision.ModeServe, []string{"a.example.com"}, ready("10.0.0.1", 80))
	c := dialDelta(t, f.addr, "envoy-1")
	c.subscribe(resourcev3.ClusterType)
	waitFor(t, "the CDS watch to be parked", func() bool {
		return f.srv.gate.Parked() == 1
	})
	// The gate holds the only watch, so nothing can have been sent yet.
	if got := testutil.ToFloat64(f.srv.metrics.pushes.WithLabelValues("clusters")); got != 0 {
		t.Fatalf("pushes before sync = %v, want 0", got)
	}
	f.upsert(keyB, revision.ModeProxy, []string{"b.example.com"})
	f.reg.SetSynced()
	cds := c.recvType(resourcev3.ClusterType)
	want := []string{"rev_default_a", "rev_default_b", translate.ActivatorDstClusterName}
	got := resourceNames(cds)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("first CDS response = %v, want the complete synced state %v", got, want)
	}
}

func TestServerAckFlipSendsOneCLA(t *testing.T) {
	f := startFixture(t, componentConfig())
	f.upsert(keyA, revision.ModeServe, []string{"a.example.com"}, ready("10.0.0.1", 80))
	f.upsert(keyB, revision.ModeServe, []string{"b.example.com"}, ready("10.0.0.2", 80))
	f.reg.SetSynced()
	c := dialDelta(t, f.addr, "envoy-1")
	if eds := syncAll(t, c); len(eds) != 2 {
		t.Fatalf("EDS clusters = %v, want 2", eds)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := f.srv.WaitFirstAck(ctx); err != nil {
		t.Fatalf("WaitFirstAck: %v", err)
	}
	f.srv.mu.RLock()
	kept := f.srv.first
	f.srv.mu.RUnlock()
	if kept != nil {
		t.Error("the first snapshot's versions are still kept after the first ACK")
	}
	if !f.srv.ConfirmedEverywhere(keyA, generation(f, keyA)) {
		t.Fatal("serve mode not confirmed after full sync")
	}

	f.reg.SetMode(keyA, revision.ModeProxy)
	gen := generation(f, keyA)
	flip := c.recvType(resourcev3.EndpointType)
	if names := resourceNames(flip); !slices.Equal(names, []string{"rev_default_a"}) || len(flip.GetRemovedResources()) != 0 {
		t.Fatalf("flip sent %v (removed %v), want exactly rev_default_a", names, flip.GetRemovedResources())
	}
	if size := proto.Size(flip); size > 1024 {
		t.Errorf("flip response is %d bytes, want <= 1 KiB", size)
	}
	if !isProxy(cla(t, flip.GetResources()[0])) {
		t.Fatalf("flipped CLA is not the activator endpoint: %v", cla(t, flip.GetResources()[0]))
	}
	if f.srv.ConfirmedEverywhere(keyA, gen) {
		t.Fatal("confirmed before the ACK")
	}
	c.ack(flip)
	if err := f.srv.WaitConfirmed(ctx, keyA, gen); err != nil {
		t.Fatalf("WaitConfirmed after ACK: %v", err)
	}
	// The next message is the next change: nothing else was sent for the
	// first flip.
	f.reg.SetMode(keyB, revision.ModeProxy)
	next := c.recvType(resourcev3.EndpointType)
	if names := resourceNames(next); !slices.Equal(names, []string{"rev_default_b"}) {
		t.Fatalf("second flip sent %v, want rev_default_b", names)
	}
	// Observed by the ACK callback, possibly just after WaitConfirmed
	// returned.
	waitFor(t, "one flip-to-ACK observation", func() bool { return histCount(t, f.srv.metrics.flipToAck) == 1 })
}

func TestServerNACK(t *testing.T) {
	f := startFixture(t, componentConfig())
	f.upsert(keyA, revision.ModeServe, []string{"a.example.com"}, ready("10.0.0.1", 80))
	f.reg.SetSynced()
	c := dialDelta(t, f.addr, "envoy-1")
	syncAll(t, c)
	f.reg.SetMode(keyA, revision.ModeProxy)
	gen := generation(f, keyA)
	flip := c.recvType(resourcev3.EndpointType)
	c.nack(flip, "bad endpoint")
	waitFor(t, "the NACK to be recorded", func() bool { return len(f.srv.Status(keyA).NACKs) == 1 })
	st := f.srv.Status(keyA)
	if nk := st.NACKs[0]; nk.Node != "envoy-1" || nk.Message != "bad endpoint" || nk.TypeURL != resourcev3.EndpointType {
		t.Fatalf("NACK = %+v", nk)
	}
	if st.Confirmed || f.srv.ConfirmedEverywhere(keyA, gen) {
		t.Fatal("a NACKed flip counts as confirmed")
	}
	if got := testutil.ToFloat64(f.srv.metrics.nacks.WithLabelValues("endpoints")); got != 1 {
		t.Fatalf("nacks_total{type=endpoints} = %v, want 1", got)
	}
	// Flipping back sends a CLA the node ACKs: the NACK is cleared.
	f.reg.SetMode(keyA, revision.ModeServe)
	back := c.recvType(resourcev3.EndpointType)
	c.ack(back)
	waitFor(t, "the NACK to clear", func() bool { return len(f.srv.Status(keyA).NACKs) == 0 })
	if !f.srv.Status(keyA).Confirmed {
		t.Fatal("serve mode not confirmed after ACK")
	}
}

func TestServerReconnectAndNoNodes(t *testing.T) {
	f := startFixture(t, componentConfig())
	f.upsert(keyA, revision.ModeProxy, []string{"a.example.com"})
	f.reg.SetSynced()
	c := dialDelta(t, f.addr, "envoy-1")
	syncAll(t, c)
	gen := generation(f, keyA)
	if !f.srv.ConfirmedEverywhere(keyA, gen) {
		t.Fatal("not confirmed after sync")
	}
	if nodes := f.srv.Nodes(); len(nodes) != 1 || nodes[0].ID != "envoy-1" || !nodes[0].Delta || nodes[0].Acked["endpoints"] != 1 {
		t.Fatalf("Nodes = %+v", nodes)
	}
	c.cancel()
	waitFor(t, "the stream to be dropped", func() bool { return len(f.srv.Nodes()) == 0 })
	if f.srv.ConfirmedEverywhere(keyA, gen) {
		t.Fatal("confirmed with no connected Envoy")
	}
	c2 := dialDelta(t, f.addr, "envoy-1")
	syncAll(t, c2)
	if !f.srv.ConfirmedEverywhere(keyA, gen) {
		t.Fatal("not confirmed after reconnect")
	}
	// A second node that has the cluster but has not subscribed to its
	// endpoints does not count: it is sent the current assignment when it
	// subscribes. Once sent the assignment, it holds confirmation back
	// until it ACKs.
	c3 := dialDelta(t, f.addr, "envoy-2")
	c3.subscribe(resourcev3.ClusterType)
	c3.ack(c3.recvType(resourcev3.ClusterType))
	if !f.srv.ConfirmedEverywhere(keyA, gen) {
		t.Fatal("envoy-2, not subscribed to the endpoints, held confirmation back")
	}
	c3.subscribe(resourcev3.EndpointType, revision.ClusterName(keyA))
	eds := c3.recvType(resourcev3.EndpointType)
	if f.srv.ConfirmedEverywhere(keyA, gen) {
		t.Fatal("confirmed while envoy-2 has not ACKed the endpoints it was sent")
	}
	c3.ack(eds)
	waitFor(t, "envoy-2's ACK to confirm", func() bool { return f.srv.ConfirmedEverywhere(keyA, gen) })
}

func TestServerMakeBeforeBreak(t *testing.T) {
	f := startFixture(t, componentConfig())
	f.upsert(keyA, revision.ModeServe, []string{"a.example.com"}, ready("10.0.0.1", 80))
	f.reg.SetSynced()
	c := dialDelta(t, f.addr, "envoy-1")
	syncAll(t, c)

	// Adding a revision: cluster first, then its endpoints, and the route
	// only after both are ACKed.
	addClusterFirst(t, f, c)
	// The route configuration is unchanged: only the new virtual host is
	// sent (VHDS).
	vhds := c.recvType(resourcev3.VirtualHostType)
	if names := resourceNames(vhds); !slices.Equal(names, []string{translate.VirtualHostName("rev_default_c")}) ||
		!strings.Contains(vhds.GetResources()[0].GetResource().String(), "c.example.com") {
		t.Fatalf("VHDS after ACK = %v, want only c's virtual host", names)
	}
	c.ack(vhds)

	// Removing a revision: virtual host first; cluster and endpoints only
	// after its removal is ACKed.
	f.reg.Delete(keyC)
	vhds = c.recvType(resourcev3.VirtualHostType)
	if !slices.Equal(vhds.GetRemovedResources(), []string{translate.VirtualHostName("rev_default_c")}) || len(vhds.GetResources()) != 0 {
		t.Fatalf("VHDS on delete: removed %v, resources %v", vhds.GetRemovedResources(), resourceNames(vhds))
	}
	if len(messages(f.srv.deltas[resourcev3.ClusterType])) != 3 {
		t.Fatal("cluster removed before the virtual host removal was ACKed")
	}
	c.ack(vhds)
	clusterRemovedAfterRoute(t, c)
}

func routeHasHost(t *testing.T, f *fixture, host string) bool {
	t.Helper()
	for _, r := range f.srv.caches[resourcev3.RouteType].GetResources() {
		for _, vh := range r.(*routev3.RouteConfiguration).GetVirtualHosts() {
			if slices.Contains(vh.GetDomains(), host) {
				return true
			}
		}
	}
	for _, r := range messages(f.srv.deltas[resourcev3.VirtualHostType]) {
		if slices.Contains(r.(*routev3.VirtualHost).GetDomains(), host) {
			return true
		}
	}
	return false
}

func histCount(t *testing.T, h prometheus.Histogram) uint64 {
	t.Helper()
	var m dto.Metric
	if err := h.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetHistogram().GetSampleCount()
}
