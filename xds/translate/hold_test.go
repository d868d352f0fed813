package translate

import (
	"slices"
	"testing"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"

	"github.com/thaw-dev/thaw/extproc"
	"github.com/thaw-dev/thaw/revision"
)

// TestHoldListenerMarksStreams: the hold clusters lead to the hold
// listener, whose ext_proc streams carry the metadata the ext_proc server
// counts hold-path requests by (the same key on both sides), and which
// thaw_activator's streams lack.
func TestHoldListenerMarksStreams(t *testing.T) {
	if HoldPathMetadata != extproc.HoldPathMetadata {
		t.Fatalf("xds marks hold-path streams with %q, extproc reads %q", HoldPathMetadata, extproc.HoldPathMetadata)
	}
	cfg := testConfig()
	cfg.IdleHoldPath = true
	res, err := Translate(snapshotOf(rev("default", "cold", revision.ModeProxy, []string{"cold.example.com"})), cfg)
	if err != nil {
		t.Fatal(err)
	}
	meta := map[string][]string{}
	for _, l := range res.Listeners {
		var hcm hcmv3.HttpConnectionManager
		if err := l.GetFilterChains()[0].GetFilters()[0].GetTypedConfig().UnmarshalTo(&hcm); err != nil {
			t.Fatal(err)
		}
		for _, hf := range hcm.GetHttpFilters() {
			var ep extprocv3.ExternalProcessor
			if hf.GetTypedConfig().UnmarshalTo(&ep) != nil {
				continue
			}
			meta[l.GetName()] = []string{}
			for _, h := range ep.GetGrpcService().GetInitialMetadata() {
				meta[l.GetName()] = append(meta[l.GetName()], h.GetKey())
			}
		}
	}
	if !slices.Equal(meta[HoldListenerName], []string{HoldPathMetadata}) || len(meta[ActivatorListenerName]) != 0 {
		t.Fatalf("ext_proc initial metadata by listener = %v, want only %s on %s", meta, HoldPathMetadata, HoldListenerName)
	}
	for _, c := range res.Clusters {
		if c.GetName() != HoldClusterName && c.GetName() != HoldH2CClusterName {
			continue
		}
		ep := c.GetLoadAssignment().GetEndpoints()[0].GetLbEndpoints()[0].GetEndpoint().GetAddress().GetEnvoyInternalAddress()
		if ep.GetServerListenerName() != HoldListenerName {
			t.Errorf("%s leads to %q, want %s", c.GetName(), ep.GetServerListenerName(), HoldListenerName)
		}
	}
}

// TestIdleClustersKept: without Config.IdleHoldPath (the default), with
// either activator, every revision keeps its cluster and assignment at
// zero, and there is no hold path.
func TestIdleClustersKept(t *testing.T) {
	for name, cfg := range map[string]Config{"default": testConfig(), "module": moduleTestConfig()} {
		res, err := Translate(snapshotOf(rev("default", "cold", revision.ModeProxy, []string{"cold.example.com"})), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if got := names(res); !slices.Contains(got, "rev_default_cold") || len(res.Endpoints) != 1 ||
			slices.Contains(got, HoldClusterName) {
			t.Errorf("%s: clusters %v and %d assignments, want the revision's and no hold cluster", name, got, len(res.Endpoints))
		}
	}
}

// TestIdleHoldPathSplitZeroPercent: with the hold path a 0% member at
// zero costs nothing (no cluster, no endpoints); an idle member with a
// share leads to the hold cluster in the weighted clusters, naming itself
// in x-thaw-revision.
func TestIdleHoldPathSplitZeroPercent(t *testing.T) {
	cfg := testConfig()
	cfg.IdleHoldPath = true
	v1 := splitRev("a", "v1", percent(90), "", "x.test")
	v1.Backends = []revision.Backend{ready("10.0.0.1", 8000)}
	res, err := Translate(snapshotOf(v1, splitRev("a", "v2", percent(10), "", "x.test"),
		splitRev("a", "v3", percent(0), "t", "x.test")), cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"rev_a_v1", ActivatorDstClusterName, HoldClusterName, HoldH2CClusterName}
	if got := names(res); !slices.Equal(got, want) {
		t.Errorf("clusters = %v, want %v", got, want)
	}
	for _, vh := range virtualHosts(res) {
		wc := vh.GetRoutes()[0].GetRoute().GetWeightedClusters().GetClusters()
		if wc == nil {
			continue
		}
		if len(wc) != 2 || wc[0].GetName() != "rev_a_v1" || wc[1].GetName() != HoldClusterName ||
			wc[1].GetRequestHeadersToAdd()[0].GetHeader().GetValue() != "a/v2" {
			t.Errorf("weighted clusters = %v, want rev_a_v1 and a/v2 through %s", wc, HoldClusterName)
		}
	}
}
