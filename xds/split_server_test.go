package xds

import (
	"errors"
	"slices"
	"testing"
	"time"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/zap/zaptest"

	"github.com/thaw-dev/thaw/revision"
	"github.com/thaw-dev/thaw/xds/translate"
)

// TestServerReportsInvalidSplit: a split whose percents sum to 90 leaves
// both members out (SkipReason, Status, the skipped gauge) while another
// revision stays routed; fixing the percent routes the split host.
func TestServerReportsInvalidSplit(t *testing.T) {
	f := startFixture(t, componentConfig())
	upsertSplit := func(k revision.Key, p int32) {
		spec := revision.DefaultSpec()
		spec.Hosts, spec.Port, spec.TrafficPercent = []string{"shop.example.com"}, 8000, &p
		f.reg.Upsert(k, spec)
	}
	f.upsert(keyC, revision.ModeServe, []string{"c.example.com"}, ready("10.0.0.3", 80))
	upsertSplit(keyA, 80)
	upsertSplit(keyB, 10)
	f.reg.SetSynced()
	waitFor(t, "both split members skipped", func() bool {
		return f.srv.SkipReason(keyA) != nil && f.srv.SkipReason(keyB) != nil
	})
	for _, k := range []revision.Key{keyA, keyB} {
		if err := f.srv.SkipReason(k); !errors.Is(err, translate.ErrInvalidSplit) {
			t.Errorf("SkipReason(%s) = %v, want translate.ErrInvalidSplit", k, err)
		}
		if st := f.srv.Status(k); !errors.Is(st.Skipped, translate.ErrInvalidSplit) || st.Applied {
			t.Errorf("Status(%s) = %+v, want skipped and not applied", k, st)
		}
	}
	if got := testutil.ToFloat64(f.srv.metrics.skipped); got != 2 {
		t.Errorf("skipped gauge = %v, want 2", got)
	}
	// The skip reasons are known at translation, a moment before the
	// caches hold its result.
	waitFor(t, "c routed", func() bool { return routeHasHost(t, f, "c.example.com") })
	if f.srv.SkipReason(keyC) != nil || routeHasHost(t, f, "shop.example.com") {
		t.Fatalf("c routed = %v, shop routed = %v: want c routed, the broken split host not",
			routeHasHost(t, f, "c.example.com"), routeHasHost(t, f, "shop.example.com"))
	}

	upsertSplit(keyA, 90)
	waitFor(t, "the fixed split routed", func() bool { return routeHasHost(t, f, "shop.example.com") })
	if f.srv.SkipReason(keyA) != nil || f.srv.SkipReason(keyB) != nil {
		t.Errorf("skip reasons after the fix: %v, %v", f.srv.SkipReason(keyA), f.srv.SkipReason(keyB))
	}
	if got := testutil.ToFloat64(f.srv.metrics.skipped); got != 0 {
		t.Errorf("skipped gauge after the fix = %v, want 0", got)
	}
}

// TestServerHostMovesInOneVirtualHostUpdate: when a revision's host becomes
// a split host (a second revision joins it), the revision's virtual host
// is removed and the split's added in one VHDS response, so Envoy never
// holds the host in two virtual hosts (it would reject the update).
func TestServerHostMovesInOneVirtualHostUpdate(t *testing.T) {
	// The two upserts below must reach the server as one snapshot, as one
	// controller update does in thaw (registry holdoff): with no holdoff
	// each publishes by itself, and the server may translate the state in
	// between (a alone at 90%: an invalid split, its host left out).
	f := startFixtureWith(t, componentConfig(), zaptest.NewLogger(t), 500*time.Millisecond)
	f.upsert(keyA, revision.ModeServe, []string{"shop.example.com"}, ready("10.0.0.1", 80))
	f.reg.SetSynced()
	c := dialDelta(t, f.addr, "envoy-1")
	syncAll(t, c)

	split := func(k revision.Key, p int32) {
		spec := revision.DefaultSpec()
		spec.Hosts, spec.TrafficPercent = []string{"shop.example.com"}, &p
		f.reg.Upsert(k, spec)
	}
	split(keyA, 90)
	split(keyB, 10)
	var vhds *discoveryv3.DeltaDiscoveryResponse
	for range 20 { // CDS and EDS for b come first; each is ACKed
		r := c.recv()
		if r.GetTypeUrl() == resourcev3.VirtualHostType {
			vhds = r
			break
		}
		if r.GetTypeUrl() == resourcev3.ClusterType {
			c.subscribe(resourcev3.EndpointType, "rev_default_a", "rev_default_b")
		}
		c.ack(r)
	}
	if vhds == nil {
		t.Fatal("no virtual host update")
	}
	if got := resourceNames(vhds); !slices.Equal(got, []string{translate.VirtualHostName("split_shop.example.com")}) {
		t.Errorf("added virtual hosts = %v, want only the split's", got)
	}
	if got := vhds.GetRemovedResources(); !slices.Equal(got, []string{translate.VirtualHostName("rev_default_a")}) {
		t.Errorf("removed virtual hosts = %v, want a's", got)
	}
}
