package egext

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	egpb "github.com/envoyproxy/gateway/proto/extension"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	dmfilterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/dynamic_modules/v3"
	routerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/thaw-dev/thaw/module/state"
	"github.com/thaw-dev/thaw/revision"
	"github.com/thaw-dev/thaw/xds/translate"
)

// moduleOptions are testOptions with the activator module, as `thaw run
// --activator=module --eg-extension` sets them (a node id given, which
// EG's Envoys must not get).
func moduleOptions() Options {
	o := testOptions()
	o.XDS.Module = &translate.ModuleConfig{Path: "/etc/thaw-module/thaw-activator.so",
		StateURL: "http://127.0.0.1:18009/activator/v1/state", ReportURL: "http://127.0.0.1:18009/activator/v1/report",
		Node: "thaw-local"}
	return o
}

// routeRevision decodes the module's per-route configuration in pc, or ""
// when there is none.
func routeRevision(t *testing.T, pc map[string]*anypb.Any) string {
	t.Helper()
	a := pc[translate.ModuleFilterName]
	if a == nil {
		return ""
	}
	var per dmfilterv3.DynamicModuleFilterPerRoute
	if err := a.UnmarshalTo(&per); err != nil {
		t.Fatal(err)
	}
	var s wrapperspb.StringValue
	if err := per.GetFilterConfig().UnmarshalTo(&s); err != nil {
		t.Fatal(err)
	}
	var rc state.RouteConfig
	if err := json.Unmarshal([]byte(s.GetValue()), &rc); err != nil {
		t.Fatal(err)
	}
	if per.GetFilterName() != translate.ModuleFilterName || per.GetDynamicModuleConfig().GetModule().GetLocal().GetFilename() != "/etc/thaw-module/thaw-activator.so" {
		t.Errorf("per-route config %v: want filter %s from the module's path", &per, translate.ModuleFilterName)
	}
	return rc.Revision
}

// TestModuleRouteGolden: with the module a Revision's route carries the
// same per-route configuration as a revision route of thaw's own
// listener (translate.ModuleRouteConfig); without it, nothing.
func TestModuleRouteGolden(t *testing.T) {
	rev, err := ParseRevision(revisionJSON(t, "default", "app-v1", ""), revision.DefaultSpec(), revision.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	base, err := Route(egRoute(nil, nil), rev)
	if err != nil {
		t.Fatal(err)
	}
	if r, err := ModuleRoute(base, rev.Key, testOptions()); err != nil || r != base {
		t.Errorf("without the module: %v, %v; want the route itself", r, err)
	}
	before := proto.Clone(base)
	r, err := ModuleRoute(base, rev.Key, moduleOptions())
	if err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(base, before) {
		t.Error("ModuleRoute modified its input")
	}
	if got := routeRevision(t, r.GetTypedPerFilterConfig()); got != "default/app-v1" {
		t.Errorf("module route config names %q, want default/app-v1", got)
	}
	o := moduleOptions()
	if want := translate.ModuleRouteConfig(&o.XDS, rev.Key); !proto.Equal(want[translate.ModuleFilterName], r.GetTypedPerFilterConfig()[translate.ModuleFilterName]) {
		t.Error("per-route config differs from thaw's own revision routes' (translate.ModuleRouteConfig)")
	}
	checkGolden(t, filepath.Join("testdata", "module_route.yaml"), goldenYAML(t, r))
	redirect := &routev3.Route{Name: "r", Action: &routev3.Route_Redirect{Redirect: &routev3.RedirectAction{}}}
	if got, err := ModuleRoute(redirect, rev.Key, moduleOptions()); err != nil || got != redirect {
		t.Errorf("redirect: %v, %v; want it unchanged", got, err)
	}
}

// TestModuleSplitGolden: each weighted cluster of a split route names its
// member, and each tag route its member alone.
func TestModuleSplitGolden(t *testing.T) {
	s, err := ParseSplit(splitJSON(t, "app", member("v1", 90, ""), member("v2", 10, "canary")))
	if err != nil {
		t.Fatal(err)
	}
	r, err := SplitRoute(egRoute(nil, nil), s, moduleOptions())
	if err != nil {
		t.Fatal(err)
	}
	w := r.GetRoute().GetWeightedClusters().GetClusters()
	if len(w) != 2 || routeRevision(t, w[0].GetTypedPerFilterConfig()) != "default/v1" || routeRevision(t, w[1].GetTypedPerFilterConfig()) != "default/v2" {
		t.Errorf("weighted clusters %v: want each naming its member", w)
	}
	if routeRevision(t, r.GetTypedPerFilterConfig()) != "" {
		t.Error("split route names a revision at route level")
	}
	rc := &routev3.RouteConfiguration{Name: "default/eg/http", VirtualHosts: []*routev3.VirtualHost{
		{Name: "default/eg/http/app_example_com", Domains: []string{"app.example.com"}, Routes: []*routev3.Route{r}}}}
	c, err := SplitCluster(egCluster(), s)
	if err != nil {
		t.Fatal(err)
	}
	_, routes, err := Translate([]*clusterv3.Cluster{c}, []*routev3.RouteConfiguration{rc}, moduleOptions())
	if err != nil {
		t.Fatal(err)
	}
	tag := routes[0].GetVirtualHosts()[1]
	if got := routeRevision(t, tag.GetRoutes()[0].GetTypedPerFilterConfig()); tag.GetDomains()[0] != "canary-app.example.com" || got != "default/v2" {
		t.Errorf("tag host %v names %q, want canary-app.example.com naming default/v2", tag.GetDomains(), got)
	}
	checkGolden(t, filepath.Join("testdata", "module_split_route.yaml"), goldenYAML(t, r))
	// Without the module the split route is unchanged from before.
	plain, err := SplitRoute(egRoute(nil, nil), s, testOptions())
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range plain.GetRoute().GetWeightedClusters().GetClusters() {
		if len(e.GetTypedPerFilterConfig()) != 0 {
			t.Errorf("without the module %s has per-filter config", e.GetName())
		}
	}
}

// egListener is an HTTP listener as EG builds it: one HCM on RDS
// routeConfig with filters before the router.
func egListener(t testing.TB, name, routeConfig string, filters ...string) *listenerv3.Listener {
	t.Helper()
	router, err := anypb.New(&routerv3.Router{})
	if err != nil {
		t.Fatal(err)
	}
	var hfs []*hcmv3.HttpFilter
	for _, f := range filters {
		hfs = append(hfs, &hcmv3.HttpFilter{Name: f, ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: router}})
	}
	hfs = append(hfs, &hcmv3.HttpFilter{Name: routerFilterName, ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: router}})
	h, err := anypb.New(&hcmv3.HttpConnectionManager{StatPrefix: "http-10080", HttpFilters: hfs,
		RouteSpecifier: &hcmv3.HttpConnectionManager_Rds{Rds: &hcmv3.Rds{RouteConfigName: routeConfig,
			ConfigSource: &corev3.ConfigSource{ConfigSourceSpecifier: &corev3.ConfigSource_Ads{Ads: &corev3.AggregatedConfigSource{}}, ResourceApiVersion: corev3.ApiVersion_V3}}}})
	if err != nil {
		t.Fatal(err)
	}
	return &listenerv3.Listener{Name: name,
		Address:      &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{Address: "0.0.0.0", PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: 10080}}}},
		FilterChains: []*listenerv3.FilterChain{{Filters: []*listenerv3.Filter{{Name: hcmFilterName, ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: h}}}}}}
}

func hcmOf(t *testing.T, l *listenerv3.Listener) *hcmv3.HttpConnectionManager {
	t.Helper()
	var h hcmv3.HttpConnectionManager
	if err := l.GetFilterChains()[0].GetFilters()[0].GetTypedConfig().UnmarshalTo(&h); err != nil {
		t.Fatal(err)
	}
	return &h
}

// TestModuleListenersGolden: the module filter goes, disabled, right
// before the router of the HCMs whose routes name revisions, and nowhere
// else; its configuration is thaw's own listener's less the node.
func TestModuleListenersGolden(t *testing.T) {
	rev, _ := revision.ParseKey("default/app-v1")
	o := moduleOptions()
	rr, err := ModuleRoute(egRoute(nil, nil), rev, o)
	if err != nil {
		t.Fatal(err)
	}
	routes := []*routev3.RouteConfiguration{
		{Name: "default/eg/http", VirtualHosts: []*routev3.VirtualHost{{Name: "a", Domains: []string{"*"}, Routes: []*routev3.Route{rr}}}},
		{Name: "default/other/http", VirtualHosts: []*routev3.VirtualHost{{Name: "b", Domains: []string{"*"}, Routes: []*routev3.Route{egRoute(nil, nil)}}}},
	}
	thawL := egListener(t, "default/eg/http", "default/eg/http", "envoy.filters.http.cors")
	other := egListener(t, "default/other/http", "default/other/http")
	in := []*listenerv3.Listener{thawL, other}
	before := proto.Clone(thawL)
	out, skipped, err := ModuleListeners(in, routes, o)
	if err != nil || skipped != nil {
		t.Fatal(err, skipped)
	}
	if !proto.Equal(thawL, before) {
		t.Error("ModuleListeners modified its input")
	}
	if out[1] != other {
		t.Error("a listener without revision routes changed")
	}
	h := hcmOf(t, out[0])
	var names []string
	for _, f := range h.GetHttpFilters() {
		names = append(names, f.GetName())
	}
	if len(names) != 3 || names[1] != translate.ModuleFilterName || names[2] != routerFilterName || !h.GetHttpFilters()[1].GetDisabled() {
		t.Fatalf("filters %v: want cors, %s (disabled), router", names, translate.ModuleFilterName)
	}
	var f dmfilterv3.DynamicModuleFilter
	if err := h.GetHttpFilters()[1].GetTypedConfig().UnmarshalTo(&f); err != nil {
		t.Fatal(err)
	}
	var s wrapperspb.StringValue
	if err := f.GetFilterConfig().UnmarshalTo(&s); err != nil {
		t.Fatal(err)
	}
	fc, err := state.DecodeFilterConfig([]byte(s.GetValue()))
	if err != nil {
		t.Fatal(err)
	}
	if fc.Node != "" || fc.StateURL != o.XDS.Module.StateURL || fc.HoldTimeoutMs != o.XDS.HoldBudget.Milliseconds() {
		t.Errorf("filter config %+v: want no node (EG names its Envoys), the state URL and the hold budget", fc)
	}
	checkGolden(t, filepath.Join("testdata", "module_listener_filter.yaml"), goldenYAML(t, h.GetHttpFilters()[1]))

	// Idempotent: a second pass adds nothing.
	again, _, err := ModuleListeners(out, routes, o)
	if err != nil || again[0] != out[0] {
		t.Errorf("second pass: %v, %v; want the listener unchanged", again, err)
	}
	// No route configurations (translation.route.includeAll unset): every HCM.
	all, _, err := ModuleListeners(in, nil, o)
	if err != nil || len(hcmOf(t, all[1]).GetHttpFilters()) != 2 {
		t.Errorf("routes nil: %v; want the filter in every HCM", err)
	}
	// Without the module: unchanged.
	if same, _, err := ModuleListeners(in, routes, testOptions()); err != nil || same[0] != thawL {
		t.Errorf("without the module: %v; want the listeners themselves", err)
	}
	// An HCM without a router cannot take the filter.
	bad := egListener(t, "bad", "default/eg/http")
	hb := hcmOf(t, bad)
	hb.HttpFilters = nil
	a, _ := anypb.New(hb)
	bad.FilterChains[0].Filters[0].ConfigType = &listenerv3.Filter_TypedConfig{TypedConfig: a}
	// An HCM without a router cannot take the filter: that listener comes
	// back unchanged and is reported, the others still get it (the hook
	// never fails on bad input).
	got, skipped, err := ModuleListeners([]*listenerv3.Listener{bad, thawL}, routes, o)
	if err != nil || !errors.Is(skipped, ErrNoRouter) || !strings.Contains(skipped.Error(), `"bad"`) || got[0] != bad ||
		!hasFilter(hcmOf(t, got[1]), translate.ModuleFilterName) {
		t.Errorf("HCM without router: skipped %v, err %v; want ErrNoRouter naming it, it unchanged and the other listener with the filter", skipped, err)
	}
}

// TestServerModuleHooks: over gRPC, a Revision's route names it to the
// module and the translation hook puts the filter into its listener.
func TestServerModuleHooks(t *testing.T) {
	c := dialServerWith(t, moduleOptions())
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	rev := &egpb.ExtensionResource{UnstructuredBytes: revisionJSON(t, "default", "app-v1", "")}
	rt, err := c.PostRouteModify(ctx, &egpb.PostRouteModifyRequest{Route: egRoute(nil, nil),
		PostRouteContext: &egpb.PostRouteExtensionContext{ExtensionResources: []*egpb.ExtensionResource{rev}}})
	if err != nil {
		t.Fatal(err)
	}
	if got := routeRevision(t, rt.GetRoute().GetTypedPerFilterConfig()); got != "default/app-v1" {
		t.Fatalf("route names %q to the module, want default/app-v1", got)
	}
	rc := &routev3.RouteConfiguration{Name: "default/eg/http", VirtualHosts: []*routev3.VirtualHost{{Name: "a", Domains: []string{"*"}, Routes: []*routev3.Route{rt.GetRoute()}}}}
	tr, err := c.PostTranslateModify(ctx, &egpb.PostTranslateModifyRequest{Listeners: []*listenerv3.Listener{egListener(t, "l", "default/eg/http")},
		Routes: []*routev3.RouteConfiguration{rc}})
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.GetListeners()) != 1 || !hasFilter(hcmOf(t, tr.GetListeners()[0]), translate.ModuleFilterName) {
		t.Errorf("listeners %v: want the module filter", tr.GetListeners())
	}
}
