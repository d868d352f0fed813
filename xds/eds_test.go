package xds

import (
	"context"
	"fmt"
	"testing"

	endpointservice "github.com/envoyproxy/go-control-plane/envoy/service/endpoint/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"go.uber.org/zap/zaptest"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/thaw-dev/thaw/revision"
)

// dialEDS opens a non-ADS delta EDS stream (EndpointDiscoveryService), as
// Envoy does for each cluster whose eds_config is an api_config_source
// naming thaw_xds (Envoy Gateway with thaw's extension).
func dialEDS(t testing.TB, addr, nodeID string) *deltaClient {
	t.Helper()
	conn, ctx, cancel := dialServer(t, addr)
	stream, err := endpointservice.NewEndpointDiscoveryServiceClient(conn).DeltaEndpoints(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return newDeltaClient(t, nodeID, stream, cancel)
}

// edsRevs upserts n serve-mode revisions e0..e(n-1) and returns their keys.
func edsRevs(f *fixture, n int) []revision.Key {
	keys := make([]revision.Key, n)
	for i := range keys {
		keys[i] = revision.Key{Namespace: "apps", Name: fmt.Sprintf("e%d", i)}
		f.upsert(keys[i], revision.ModeServe, nil, ready(fmt.Sprintf("10.0.1.%d", i+1), 8080))
	}
	return keys
}

// TestEDSStreamPerRevision plays Envoy Gateway's Envoy: one node id, one
// non-ADS delta EDS stream per revision, no ADS stream to thaw. Each
// stream gets only its revision's assignment; a flip is sent on that
// stream alone and confirmed only once it is ACKed there.
func TestEDSStreamPerRevision(t *testing.T) {
	const n = 40
	f := startFixture(t, componentConfig())
	keys := edsRevs(f, n)
	f.reg.SetSynced()

	streams := make([]*deltaClient, n)
	for i, k := range keys {
		c := dialEDS(t, f.addr, "eg-envoy")
		c.subscribe(resourcev3.EndpointType, revision.ClusterName(k))
		r := c.recvType(resourcev3.EndpointType)
		if names := resourceNames(r); len(names) != 1 || names[0] != revision.ClusterName(k) {
			t.Fatalf("stream %d got %v, want only %s", i, names, revision.ClusterName(k))
		}
		c.ack(r)
		streams[i] = c
	}
	for _, k := range keys {
		k := k
		waitFor(t, "serve mode confirmed on "+k.String(), func() bool { return f.srv.ConfirmedEverywhere(k, generation(f, k)) })
	}

	flipped := keys[n/2]
	f.reg.SetMode(flipped, revision.ModeProxy)
	gen := generation(f, flipped)
	c := streams[n/2]
	r := c.recvType(resourcev3.EndpointType)
	if names := resourceNames(r); len(names) != 1 || names[0] != revision.ClusterName(flipped) || !isProxy(cla(t, r.GetResources()[0])) {
		t.Fatalf("flip sent %v, want the proxy-mode %s", names, revision.ClusterName(flipped))
	}
	waitFor(t, "the flip applied", func() bool { return f.srv.Status(flipped).Generation >= gen })
	if f.srv.ConfirmedEverywhere(flipped, gen) {
		t.Fatal("confirmed before the revision's EDS stream ACKed")
	}
	c.ack(r)
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := f.srv.WaitConfirmed(ctx, flipped, gen); err != nil {
		t.Fatalf("WaitConfirmed after the ACK: %v", err)
	}
	// Other streams were sent nothing: their revisions stay confirmed.
	if !f.srv.ConfirmedEverywhere(keys[0], generation(f, keys[0])) {
		t.Fatal("an unrelated revision lost its confirmation")
	}
	// The flipped revision's only holder disconnects: nothing holds it, so
	// nothing can confirm it.
	c.cancel()
	waitFor(t, "the closed stream forgotten", func() bool { return !f.srv.ConfirmedEverywhere(flipped, gen) })
	if len(f.srv.Nodes()) != n-1 {
		t.Fatalf("%d streams tracked, want %d", len(f.srv.Nodes()), n-1)
	}
}

// TestEDSStreamsWithADS: an ADS Envoy and an EDS-per-revision Envoy hold
// the same assignment; confirmation needs both ACKs.
func TestEDSStreamsWithADS(t *testing.T) {
	f := startFixture(t, componentConfig())
	f.upsert(keyA, revision.ModeServe, []string{"a.example.com"}, ready("10.0.0.1", 80))
	f.reg.SetSynced()
	ads := dialDelta(t, f.addr, "own-envoy")
	syncAll(t, ads)
	eds := dialEDS(t, f.addr, "eg-envoy")
	eds.subscribe(resourcev3.EndpointType, revision.ClusterName(keyA))
	eds.ack(eds.recvType(resourcev3.EndpointType))

	f.reg.SetMode(keyA, revision.ModeProxy)
	gen := generation(f, keyA)
	ads.ack(ads.recvType(resourcev3.EndpointType))
	r := eds.recvType(resourcev3.EndpointType)
	waitFor(t, "the flip applied", func() bool { return f.srv.Status(keyA).Generation >= gen })
	if f.srv.ConfirmedEverywhere(keyA, gen) {
		t.Fatal("confirmed while the EDS stream has not ACKed")
	}
	eds.ack(r)
	waitFor(t, "confirmation by both", func() bool { return f.srv.ConfirmedEverywhere(keyA, gen) })
}

// TestEDSStreamLimits: EDS streams have their own per-node bound and do
// not use up the node's ADS streams.
func TestEDSStreamLimits(t *testing.T) {
	f := startFixtureOpts(t, ServerOptions{Logger: zaptest.NewLogger(t), Config: componentConfig(),
		Limits: Limits{MaxStreamsPerNode: 1, MaxEDSStreamsPerNode: 3}}, 0)
	keys := edsRevs(f, 4)
	f.reg.SetSynced()
	for _, k := range keys[:3] {
		c := dialEDS(t, f.addr, "eg-envoy")
		c.subscribe(resourcev3.EndpointType, revision.ClusterName(k))
		c.ack(c.recvType(resourcev3.EndpointType))
	}
	over := dialEDS(t, f.addr, "eg-envoy")
	over.subscribe(resourcev3.EndpointType, revision.ClusterName(keys[3]))
	err := streamEnd(t, over)
	if status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("fourth EDS stream of one node ended with %v, want ResourceExhausted", err)
	}
	// The same node id still gets its one ADS stream.
	ads := dialDelta(t, f.addr, "eg-envoy")
	ads.subscribe(resourcev3.ClusterType)
	ads.ack(ads.recvType(resourcev3.ClusterType))
	// The refused stream's end reaches the server after the client saw it.
	waitFor(t, "3 EDS + 1 ADS streams tracked", func() bool { return len(f.srv.Nodes()) == 4 })
}
