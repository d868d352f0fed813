package xds

import (
	"context"
	"testing"
	"time"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"

	"github.com/thaw-dev/thaw/revision"
	"github.com/thaw-dev/thaw/xds/translate"
)

// TestServerResumedEnvoyCountsAsAcked: after thaw restarts with unchanged
// state, a reconnecting Envoy reports the versions it holds
// (initial_resource_versions) and the server sends nothing new; the Envoy
// must still count as up to date, or thaw local would never become ready
// and scale to zero would never be confirmed.
func TestServerResumedEnvoyCountsAsAcked(t *testing.T) {
	held := map[string]map[string]string{}
	record := func(r *discoveryv3.DeltaDiscoveryResponse) {
		m := held[r.GetTypeUrl()]
		if m == nil {
			m = map[string]string{}
			held[r.GetTypeUrl()] = m
		}
		for _, res := range r.GetResources() {
			m[res.GetName()] = res.GetVersion()
		}
	}
	first := startFixture(t, componentConfig())
	first.upsert(keyA, revision.ModeProxy, []string{"a.example.com"})
	first.reg.SetSynced()
	c := dialDelta(t, first.addr, "envoy-1")
	c.subscribe(resourcev3.ClusterType)
	cds := c.recvType(resourcev3.ClusterType)
	record(cds)
	c.ack(cds)
	c.subscribe(resourcev3.EndpointType, "rev_default_a")
	eds := c.recvType(resourcev3.EndpointType)
	record(eds)
	c.ack(eds)
	c.subscribe(resourcev3.ListenerType)
	lds := c.recvType(resourcev3.ListenerType)
	record(lds)
	c.ack(lds)
	c.subscribe(resourcev3.RouteType, translate.HTTPListenerName)
	rds := c.recvType(resourcev3.RouteType)
	record(rds)
	c.ack(rds)
	c.subscribe(resourcev3.VirtualHostType)
	vhds := c.recvType(resourcev3.VirtualHostType)
	record(vhds)
	c.ack(vhds)
	c.cancel()

	// A new server (thaw restarted) with the same state.
	second := startFixture(t, componentConfig())
	second.upsert(keyA, revision.ModeProxy, []string{"a.example.com"})
	second.reg.SetSynced()
	c2 := dialDelta(t, second.addr, "envoy-1")
	for _, typ := range resourceTypes {
		var names []string
		if typ == resourcev3.EndpointType {
			names = []string{"rev_default_a"}
		} else if typ == resourcev3.RouteType {
			names = []string{translate.HTTPListenerName}
		}
		c2.send(&discoveryv3.DeltaDiscoveryRequest{TypeUrl: typ, ResourceNamesSubscribe: names, InitialResourceVersions: held[typ]})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := second.srv.WaitFirstAck(ctx); err != nil {
		t.Fatalf("WaitFirstAck after a resumed stream: %v", err)
	}
	if gen := generation(second, keyA); !second.srv.ConfirmedEverywhere(keyA, gen) {
		t.Fatal("resumed Envoy holding the current endpoints is not counted as confirmed")
	}
}
