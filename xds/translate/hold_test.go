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

// TestIdleClustersKept: with the activator module (it pins requests to
// hosts of the routed cluster) or Config.KeepIdleClusters (Envoy Gateway's
// Envoys take revisions' assignments from thaw) every revision keeps its
// cluster and assignment at zero.
func TestIdleClustersKept(t *testing.T) {
	keep := testConfig()
	keep.KeepIdleClusters = true
	for name, cfg := range map[string]Config{"module": moduleTestConfig(), "KeepIdleClusters": keep} {
		res, err := Translate(snapshotOf(rev("default", "cold", revision.ModeProxy, []string{"cold.example.com"})), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if got := names(res); !slices.Contains(got, "rev_default_cold") || len(res.Endpoints) != 1 {
			t.Errorf("%s: clusters %v and %d assignments, want the revision's", name, got, len(res.Endpoints))
		}
	}
}
