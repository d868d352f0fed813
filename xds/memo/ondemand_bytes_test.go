package memo

import (
	"bytes"
	"fmt"
	"testing"

	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"

	"github.com/thaw-dev/thaw/revision"
	"github.com/thaw-dev/thaw/xds/encoded"
	"github.com/thaw-dev/thaw/xds/internal/xdstest"
	"github.com/thaw-dev/thaw/xds/translate"
)

// TestOnDemandHostBytes checks that what an Envoy fetching a host on
// demand is sent, the encoded virtual host and its version, is byte for
// byte the virtual host built as before the module's per-route
// configuration came from encoded parts (translate.ModuleRouteConfig,
// two proto marshals, set on translate.RevisionVirtualHost's output), for
// idle and awake revisions, with and without the idle hold path.
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
				got := tl.Encoded[resourcev3.VirtualHostType][translate.VirtualHostName(name)]
				if got == nil {
					t.Fatalf("%s: no virtual host %s", rev.Key, translate.VirtualHostName(name))
				}
				if got.Version != want.Version || !bytes.Equal(got.Bytes, want.Bytes) {
					t.Errorf("%s: virtual host differs from the two-marshal build:\n got %x\nwant %x", rev.Key, got.Bytes, want.Bytes)
				}
			}
		})
	}
}
