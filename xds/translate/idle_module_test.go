package translate

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"testing"

	dmfilterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/dynamic_modules/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/thaw-dev/thaw/module/state"
	"github.com/thaw-dev/thaw/revision"
)

// moduleIdleConfig is moduleTestConfig with Config.IdleHoldPath: the
// module's cluster routes (idle_module.go).
func moduleIdleConfig() Config {
	cfg := moduleTestConfig()
	cfg.IdleHoldPath = true
	return cfg
}

// TestTranslateModuleIdleGolden: with the module and IdleHoldPath every
// revision route (and every weighted cluster of a split) is
// cluster_header x-thaw-cluster with a per-route configuration naming the
// revision and its cluster; an idle revision (no backend) has no cluster
// and no assignment, and there is no hold cluster or hold listener.
func TestTranslateModuleIdleGolden(t *testing.T) {
	for _, tt := range []struct {
		name string
		snap *revision.Snapshot
	}{
		{name: "module_idle", snap: snapshotOf(
			rev("default", "awake", revision.ModeServe, []string{"awake.example.com"}, ready("10.0.0.1", 8080)),
			rev("default", "cold", revision.ModeProxy, []string{"cold.example.com"}),
			rev("default", "starting", revision.ModeProxy, []string{"starting.example.com"},
				revision.Backend{Address: "10.0.0.2", Port: 8080}),
		)},
		{name: "module_idle_split", snap: snapshotOf(
			withSpec(rev("shop", "v1", revision.ModeServe, []string{"shop.example.com"}, ready("10.0.0.1", 8080)),
				func(s *revision.Spec) { s.TrafficPercent = percent(90) }),
			withSpec(rev("shop", "v2", revision.ModeProxy, []string{"shop.example.com"}),
				func(s *revision.Spec) { s.TrafficPercent, s.Tag = percent(10), "canary" }),
			withSpec(rev("shop", "v3", revision.ModeProxy, []string{"shop.example.com"}),
				func(s *revision.Spec) { s.TrafficPercent, s.Tag = percent(0), "next" }),
		)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Translate(tt.snap, moduleIdleConfig())
			if err != nil {
				t.Fatalf("Translate: %v", err)
			}
			checkGolden(t, filepath.Join("testdata", "translate_"+tt.name+".yaml"), goldenYAML(t, res))
		})
	}
}

// TestModuleIdleRouteUnchangedOnWake: a revision's virtual host is the
// same message at zero (no cluster) and with a backend (its cluster and
// assignment): a wake or a return to zero changes no route. The route
// reads the module's header, and its per-route configuration names the
// revision's own cluster.
func TestModuleIdleRouteUnchangedOnWake(t *testing.T) {
	cfg := moduleIdleConfig()
	idle, err := Translate(snapshotOf(rev("default", "cold", revision.ModeProxy, []string{"cold.example.com"})), cfg)
	if err != nil {
		t.Fatal(err)
	}
	awake, err := Translate(snapshotOf(rev("default", "cold", revision.ModeServe, []string{"cold.example.com"}, ready("10.0.0.1", 8080))), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got := names(idle); slices.Contains(got, "rev_default_cold") || len(idle.Endpoints) != 0 ||
		slices.Contains(got, HoldClusterName) || len(idle.Listeners) != 2 {
		t.Errorf("idle: clusters %v, %d assignments, %d listeners; want no revision or hold cluster, no assignment, no hold listener",
			got, len(idle.Endpoints), len(idle.Listeners))
	}
	if got := names(awake); !slices.Contains(got, "rev_default_cold") || len(awake.Endpoints) != 1 {
		t.Errorf("awake: clusters %v, %d assignments; want the revision's", got, len(awake.Endpoints))
	}
	vi, va := virtualHosts(idle), virtualHosts(awake)
	if len(vi) != len(va) || !proto.Equal(vi[0], va[0]) {
		t.Fatalf("virtual host changes on wake:\nidle  %v\nawake %v", vi, va)
	}
	r := vi[0].GetRoutes()[0]
	if h := r.GetRoute().GetClusterHeader(); h != state.ClusterHeader {
		t.Errorf("route cluster_header = %q, want %q", h, state.ClusterHeader)
	}
	var per dmfilterv3.DynamicModuleFilterPerRoute
	if err := r.GetTypedPerFilterConfig()[ModuleFilterName].UnmarshalTo(&per); err != nil {
		t.Fatal(err)
	}
	var js wrapperspb.StringValue
	if err := per.GetFilterConfig().UnmarshalTo(&js); err != nil {
		t.Fatal(err)
	}
	var rc state.RouteConfig
	if err := json.Unmarshal([]byte(js.GetValue()), &rc); err != nil {
		t.Fatal(err)
	}
	if rc.Revision != "default/cold" || rc.Cluster != "rev_default_cold" {
		t.Errorf("per-route config = %+v, want revision default/cold and cluster rev_default_cold", rc)
	}
	if _, err := state.DecodeRouteConfig([]byte(js.GetValue())); err != nil {
		t.Errorf("the module refuses the route config: %v", err)
	}
}

// TestClusterAhead: with the module's cluster routes a revision without
// any backend keeps a cluster once the autoscaler wants it awake
// (DesiredScale > 0), and is idle (no cluster) otherwise; without the
// module, or without the idle hold path, the desired scale changes
// nothing.
func TestClusterAhead(t *testing.T) {
	module := &ModuleConfig{Path: "/opt/thaw/thaw-activator.so", StateURL: "http://127.0.0.1:9901/activator/v1/state",
		ReportURL: "http://127.0.0.1:9901/activator/v1/report", Node: "envoy-1"}
	backend := []revision.Backend{{Address: "10.0.0.1", Port: 80, Ready: true}}
	for _, tc := range []struct {
		name     string
		hold     bool
		module   *ModuleConfig
		desired  int32
		backends []revision.Backend
		ahead    bool
		idle     bool
	}{
		{name: "module at zero", hold: true, module: module, desired: 0, idle: true},
		{name: "module before the first decision", hold: true, module: module, desired: -1, idle: true},
		{name: "module wanted awake", hold: true, module: module, desired: 1, ahead: true},
		{name: "module with a backend", hold: true, module: module, desired: 1, backends: backend, ahead: true},
		{name: "module draining", hold: true, module: module, desired: 0, backends: backend},
		{name: "ext_proc hold path wanted awake", hold: true, desired: 1, idle: true},
		{name: "module without the hold path", module: module, desired: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := &Config{IdleHoldPath: tc.hold, Module: tc.module}
			rev := &revision.Revision{Key: revision.Key{Namespace: "default", Name: "a"}, DesiredScale: tc.desired, Backends: tc.backends}
			if got := ClusterAhead(cfg, rev); got != tc.ahead {
				t.Errorf("ClusterAhead = %v, want %v", got, tc.ahead)
			}
			if got := IdleRevision(cfg, rev); got != tc.idle {
				t.Errorf("IdleRevision = %v, want %v", got, tc.idle)
			}
		})
	}
}
