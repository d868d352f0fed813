package xds

import (
	"context"
	"slices"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"

	"github.com/thaw-dev/thaw/revision"
)

// sotwClient is an in-process state-of-the-world ADS client (older Envoys).
type sotwClient struct {
	t      *testing.T
	stream discoveryv3.AggregatedDiscoveryService_StreamAggregatedResourcesClient
	node   *corev3.Node
}

func dialSotw(t *testing.T, addr, nodeID string) *sotwClient {
	t.Helper()
	conn, ctx, _ := dialServer(t, addr)
	stream, err := discoveryv3.NewAggregatedDiscoveryServiceClient(conn).StreamAggregatedResources(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return &sotwClient{t: t, stream: stream, node: &corev3.Node{Id: nodeID}}
}

func (c *sotwClient) send(req *discoveryv3.DiscoveryRequest) {
	c.t.Helper()
	req.Node = c.node
	if err := c.stream.Send(req); err != nil {
		c.t.Fatal(err)
	}
}

func (c *sotwClient) recv() *discoveryv3.DiscoveryResponse {
	c.t.Helper()
	ch := make(chan *discoveryv3.DiscoveryResponse, 1)
	errc := make(chan error, 1)
	go func() {
		r, err := c.stream.Recv()
		if err != nil {
			errc <- err
			return
		}
		ch <- r
	}()
	select {
	case r := <-ch:
		return r
	case err := <-errc:
		c.t.Fatalf("recv: %v", err)
	case <-time.After(waitLimit):
		c.t.Fatalf("no response within %s", waitLimit)
	}
	return nil
}

// get requests names of typeURL, ACKing the previous response r (nil for
// the first request), and returns the answer.
func (c *sotwClient) get(typeURL string, prev *discoveryv3.DiscoveryResponse, names ...string) *discoveryv3.DiscoveryResponse {
	c.t.Helper()
	c.send(&discoveryv3.DiscoveryRequest{TypeUrl: typeURL, ResourceNames: names,
		VersionInfo: prev.GetVersionInfo(), ResponseNonce: prev.GetNonce()})
	r := c.recv()
	if r.GetTypeUrl() != typeURL {
		c.t.Fatalf("got %s, want %s", r.GetTypeUrl(), typeURL)
	}
	return r
}

func TestServerStateOfTheWorld(t *testing.T) {
	f := startFixture(t, componentConfig())
	f.upsert(keyA, revision.ModeServe, []string{"a.example.com"}, ready("10.0.0.1", 80))
	f.upsert(keyB, revision.ModeProxy, []string{"b.example.com"})
	f.reg.SetSynced()
	c := dialSotw(t, f.addr, "old-envoy")
	cds := c.get(resourcev3.ClusterType, nil)
	if len(cds.GetResources()) != 3 {
		t.Fatalf("CDS has %d clusters, want 3", len(cds.GetResources()))
	}
	// ACK CDS: the next request of the type carries the nonce.
	c.send(&discoveryv3.DiscoveryRequest{TypeUrl: resourcev3.ClusterType,
		VersionInfo: cds.GetVersionInfo(), ResponseNonce: cds.GetNonce()})
	names := []string{"rev_default_a", "rev_default_b"}
	eds := c.get(resourcev3.EndpointType, nil, names...)
	if len(eds.GetResources()) != 2 {
		t.Fatalf("EDS has %d assignments, want 2", len(eds.GetResources()))
	}
	// ACK EDS (and keep the watch open) by re-requesting with the nonce.
	c.send(&discoveryv3.DiscoveryRequest{TypeUrl: resourcev3.EndpointType, ResourceNames: names,
		VersionInfo: eds.GetVersionInfo(), ResponseNonce: eds.GetNonce()})
	waitFor(t, "the SotW ACK", func() bool { return f.srv.ConfirmedEverywhere(keyA, generation(f, keyA)) })

	f.reg.SetMode(keyA, revision.ModeProxy)
	gen := generation(f, keyA)
	flip := c.recv()
	if flip.GetTypeUrl() != resourcev3.EndpointType || len(flip.GetResources()) != 1 {
		t.Fatalf("flip sent %s with %d resources, want one ClusterLoadAssignment", flip.GetTypeUrl(), len(flip.GetResources()))
	}
	if f.srv.ConfirmedEverywhere(keyA, gen) {
		t.Fatal("confirmed before the ACK")
	}
	c.send(&discoveryv3.DiscoveryRequest{TypeUrl: resourcev3.EndpointType, ResourceNames: names,
		VersionInfo: flip.GetVersionInfo(), ResponseNonce: flip.GetNonce()})
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := f.srv.WaitConfirmed(ctx, keyA, gen); err != nil {
		t.Fatalf("WaitConfirmed: %v", err)
	}
	nodes := f.srv.Nodes()
	if len(nodes) != 1 || nodes[0].Delta || nodes[0].ID != "old-envoy" {
		t.Fatalf("Nodes = %+v", nodes)
	}
	if got := slices.Sorted(func(yield func(string) bool) {
		for k := range nodes[0].Acked {
			if !yield(k) {
				return
			}
		}
	}); !slices.Equal(got, []string{"clusters", "endpoints"}) {
		t.Fatalf("acked types = %v", got)
	}
}
