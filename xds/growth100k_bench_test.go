package xds

import (
	"context"
	"fmt"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/thaw-dev/thaw/revision"
)

// BenchmarkServerAddRemove100k is BenchmarkServerAddRemove10k with 100,000
// revisions: one revision added and removed again through the whole server
// and an in-process delta ADS client that follows Envoy's protocol.
// Reported: add-bytes and remove-bytes (every response the change caused,
// all types), sync-MiB (the bytes of the initial sync, all types: what a
// new Envoy receives at 100k). `thaw local` cannot add a revision while it
// runs, so bench/scenarios' scale100k takes the added-revision figure
// from here.
func BenchmarkServerAddRemove100k(b *testing.B) {
	const n = 100000
	snap := benchSnapshot(n)
	f := startBenchFixture(b)
	for k, r := range snap.Revisions {
		f.reg.Upsert(k, r.Spec)
		f.reg.SetBackends(k, r.Backends)
		f.reg.SetMode(k, r.Mode)
	}
	f.reg.SetSynced()
	// The initial sync at 100k carries responses of tens of MB (every
	// cluster in one CDS response, every virtual host in one VHDS
	// response): Envoy accepts them, so the client must too.
	c := dialDeltaMax(b, f.addr, "bench", 512<<20)
	syncAll(b, c)
	synced := pushedBytes(f)
	vhName := func(k revision.Key) string { return VirtualHostName(revision.ClusterName(k)) }
	var added, removed float64
	for i := 0; b.Loop(); i++ {
		key := revision.Key{Namespace: "grow", Name: fmt.Sprintf("app-%d", i)}
		before := pushedBytes(f)
		spec := revision.DefaultSpec()
		spec.Hosts = []string{fmt.Sprintf("app-%d.grow.example.com", i)}
		f.reg.Upsert(key, spec)
		f.reg.SetBackends(key, []revision.Backend{ready("10.200.0.1", 8080)})
		f.reg.SetMode(key, revision.ModeServe)
		recvUntil(b, c, func(r *discoveryv3.DeltaDiscoveryResponse) bool {
			return r.GetTypeUrl() == resourcev3.VirtualHostType && len(r.GetResources()) == 1 &&
				r.GetResources()[0].GetName() == vhName(key)
		})
		mid := pushedBytes(f)
		added += mid - before
		f.reg.Delete(key)
		gone := map[string]bool{}
		recvUntil(b, c, func(r *discoveryv3.DeltaDiscoveryResponse) bool {
			if len(r.GetRemovedResources()) > 0 {
				gone[r.GetTypeUrl()] = true
			}
			return gone[resourcev3.VirtualHostType] && gone[resourcev3.ClusterType] && gone[resourcev3.EndpointType]
		})
		removed += pushedBytes(f) - mid
	}
	b.ReportMetric(added/float64(b.N), "add-bytes")
	b.ReportMetric(removed/float64(b.N), "remove-bytes")
	b.ReportMetric(synced/(1<<20), "sync-MiB")
}

// dialDeltaMax is dialDelta accepting responses of up to maxRecv bytes.
func dialDeltaMax(tb testing.TB, addr, nodeID string, maxRecv int) *deltaClient {
	tb.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxRecv)))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { conn.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	stream, err := discoveryv3.NewAggregatedDiscoveryServiceClient(conn).DeltaAggregatedResources(ctx)
	if err != nil {
		cancel()
		tb.Fatal(err)
	}
	tb.Cleanup(cancel)
	return &deltaClient{t: tb, node: &corev3.Node{Id: nodeID, Cluster: "test"}, stream: stream, cancel: cancel, first: true}
}
