package memo

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/envoyproxy/go-control-plane/pkg/server/stream/v3"

	"github.com/thaw-dev/thaw/revision"
	"github.com/thaw-dev/thaw/xds/cache"
	"github.com/thaw-dev/thaw/xds/encoded"
	"github.com/thaw-dev/thaw/xds/internal/xdstest"
	"github.com/thaw-dev/thaw/xds/ondemand"
	"github.com/thaw-dev/thaw/xds/translate"
)

// TestOnDemandHostBytes checks that what an Envoy fetching a host on
// demand is sent, the encoded virtual host and its version, is byte for
// byte the virtual host built as before the module's per-route
// configuration came from encoded parts (translate.ModuleRouteConfig,
// two proto marshals, set on translate.RevisionVirtualHost's output), for
// idle and awake revisions, with and without the idle hold path. The
// hosts are encoded lazily (lazyVirtualHost): each is fetched on demand
// from a VHDS cache, never encoded before.
func TestOnDemandHostBytes(t *testing.T) {
	for _, hold := range []bool{false, true} {
		t.Run(fmt.Sprintf("hold=%v", hold), func(t *testing.T) {
			cfg := testConfig()
			cfg.OnDemandHosts = true
			cfg.IdleHoldPath = hold
			cfg.Module = &translate.ModuleConfig{Path: "/opt/thaw/thaw-activator.so", Node: "n",
				StateURL: "http://127.0.0.1:9901/activator/v1/state", ReportURL: "http://127.0.0.1:9901/activator/v1/report"}
			revs := []*revision.Revision{
				xdstest.Rev("ns", "idle", revision.ModeProxy, []string{"idle.example.com", "*.idle.example.com"}),
				xdstest.Rev("ns-long-namespace", "awake", revision.ModeServe, []string{"awake.example.com"}, xdstest.Ready("10.0.0.1", 8080)),
			}
			tr, err := New(&cfg, true)
			if err != nil {
				t.Fatal(err)
			}
			tl, err := tr.Translate(xdstest.SnapshotOf(revs...))
			if err != nil {
				t.Fatal(err)
			}
			for _, rev := range revs {
				name := revision.ClusterName(rev.Key)
				vh := translate.RevisionVirtualHost(translate.VirtualHostParams{Key: rev.Key, Domains: rev.Spec.Hosts, Config: &cfg,
					Name: name, Cluster: translate.RouteTarget(&cfg, rev, name), Timeouts: translate.TimeoutsOf(&rev.Spec)})
				vh.Routes[0].TypedPerFilterConfig = translate.ModuleRouteConfig(&cfg, rev.Key)
				want, err := encoded.Encode(vh)
				if err != nil {
					t.Fatal(err)
				}
				vhName := translate.VirtualHostName(name)
				lazy := tl.Encoded[resourcev3.VirtualHostType][vhName]
				if lazy == nil {
					t.Fatalf("%s: no virtual host %s", rev.Key, vhName)
				}
				if !lazy.IsLazy() {
					t.Fatalf("%s: virtual host encoded at translation, want lazily", rev.Key)
				}
				// Fetched on demand, never encoded before: the cache encodes it.
				got := fetchOnDemand(t, tl, "thaw_http/"+rev.Spec.Hosts[0])
				if got.GetName() != vhName || got.GetVersion() != want.Version || !bytes.Equal(got.GetResource().GetValue(), want.Bytes) {
					t.Errorf("%s: virtual host fetched on demand differs from the two-marshal build:\n got %s %x\nwant %x",
						rev.Key, got.GetName(), got.GetResource().GetValue(), want.Bytes)
				}
				b, v, err := lazy.Get()
				if err != nil || v != want.Version || !bytes.Equal(b, want.Bytes) {
					t.Errorf("%s: lazy encoding differs from the fetched one (%v)", rev.Key, err)
				}
			}
		})
	}
}

// fetchOnDemand puts tl's virtual hosts in a VHDS cache on demand, as the
// server does, and returns what a wildcard stream asking for alias is
// sent.
func fetchOnDemand(t *testing.T, tl *Translation, alias string) *discoveryv3.Resource {
	t.Helper()
	c := cache.NewDelta(resourcev3.VirtualHostType, 64)
	c.SetDemand(ondemand.NewPolicy(translate.HTTPListenerName, time.Minute), 8)
	upd := map[string]types.Resource{}
	lazy := map[string]*encoded.Resource{}
	for name, e := range tl.Encoded[resourcev3.VirtualHostType] {
		upd[name], lazy[name] = nil, e
	}
	if err := c.UpdateLazy(upd, nil, nil, lazy, nil); err != nil {
		t.Fatal(err)
	}
	sub := stream.NewDeltaSubscription(nil, nil, nil, true)
	ch := make(chan cachev3.DeltaResponse, 2)
	req := &discoveryv3.DeltaDiscoveryRequest{TypeUrl: resourcev3.VirtualHostType}
	cancel, err := c.CreateDeltaWatch(req, sub, ch)
	if err != nil {
		t.Fatal(err)
	}
	<-ch // first answer: nothing resident
	cancel()
	sub.UpdateResourceSubscriptions([]string{alias}, nil)
	cancel, err = c.CreateDeltaWatch(&discoveryv3.DeltaDiscoveryRequest{TypeUrl: resourcev3.VirtualHostType, ResponseNonce: "1",
		ResourceNamesSubscribe: []string{alias}}, sub, ch)
	if err != nil {
		t.Fatal(err)
	}
	defer cancel()
	select {
	case r := <-ch:
		resp, err := r.GetDeltaDiscoveryResponse()
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.GetResources()) != 1 {
			t.Fatalf("asked %s, got %d resources", alias, len(resp.GetResources()))
		}
		return resp.GetResources()[0]
	default:
		t.Fatalf("asked %s, no answer", alias)
		return nil
	}
}
