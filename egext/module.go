package egext

import (
	"errors"
	"fmt"
	"maps"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/thaw-dev/thaw/revision"
	"github.com/thaw-dev/thaw/xds/translate"
)

// hcmFilterName is the network filter name of an HTTP connection manager
// (EG names it so; thaw recognises the HCM by its type too).
const hcmFilterName = "envoy.filters.network.http_connection_manager"

// routerFilterName is the terminal HTTP filter EG puts last in every HCM.
const routerFilterName = "envoy.filters.http.router"

// ErrNoRouter is returned (wrapped) for an HCM without the router filter:
// thaw cannot place the module before a filter that is not there.
var ErrNoRouter = errors.New("egext: HTTP connection manager without " + routerFilterName)

// moduleConfig returns o's xDS config as EG's Envoys need it for the
// activator module, or nil when thaw runs without it (Options.XDS.Module
// nil: the ext_proc path). The node is cleared: EG names its Envoys
// (--service-node), and every EG Envoy gets the same listener, so each
// module reads its own Envoy's node id (state.ServiceNode).
func moduleConfig(o Options) *translate.Config {
	if o.XDS.Module == nil {
		return nil
	}
	cfg := o.XDS
	m := *cfg.Module
	m.Node = ""
	cfg.Module = &m
	return &cfg
}

// ModuleRoute is the module part of PostRouteModify for a single Revision
// backend: with the activator module (Options.XDS.Module) a route
// forwarding to a cluster gets the per-route configuration naming key
// (translate.ModuleRouteConfig, the same as a revision route of thaw's
// own listener), which also enables the module filter ModuleListeners
// adds disabled. Without the module, or for a route that does not
// forward, r comes back unchanged. r is not modified.
func ModuleRoute(r *routev3.Route, key revision.Key, o Options) (*routev3.Route, error) {
	cfg := moduleConfig(o)
	if cfg == nil || r.GetRoute() == nil {
		return r, nil
	}
	out := proto.Clone(r).(*routev3.Route)
	setModuleConfig(&out.TypedPerFilterConfig, translate.ModuleRouteConfig(cfg, key))
	if err := out.ValidateAll(); err != nil {
		return nil, fmt.Errorf("route %q for %s: %w", r.GetName(), key, err)
	}
	return out, nil
}

// setModuleConfig adds the module's entry of pc to *dst (EG's other
// per-filter configurations stay).
func setModuleConfig(dst *map[string]*anypb.Any, pc map[string]*anypb.Any) {
	if pc == nil {
		return
	}
	if *dst == nil {
		*dst = make(map[string]*anypb.Any, len(pc))
	}
	maps.Copy(*dst, pc)
}

// ModuleListeners is the module part of PostTranslateModify: with the
// activator module it inserts the module's HTTP filter (translate.ModuleFilter,
// named translate.ModuleFilterName, with disabled: true) right before
// the router of every HTTP connection manager that serves a revision
// route, so only the routes ModuleRoute (or SplitRoute) configured run
// it. An HCM serves a revision route when its RDS route configuration
// (or its inline one) has a route or weighted cluster carrying the
// module's per-route configuration; when routes is nil (EG's translation
// hook without translation.route.includeAll) thaw cannot tell, and every
// HCM gets the filter. An HCM that already has it is left as it is.
// Listeners without such an HCM come back as they were (the same
// pointers); without the module every listener does.
//
// A listener thaw cannot change (an HCM to change without a router,
// ErrNoRouter, or one that does not decode, or a result that does not
// validate) comes back unchanged and is reported in skipped (errors
// joined, each naming its listener): bad input never fails the hook,
// which with failOpen false would freeze EG's whole translation. err is
// only for options the filter cannot be built from (ErrInvalidOptions).
func ModuleListeners(listeners []*listenerv3.Listener, routes []*routev3.RouteConfiguration, o Options) (out []*listenerv3.Listener, skipped, err error) {
	cfg := moduleConfig(o)
	if cfg == nil || listeners == nil {
		return listeners, nil, nil
	}
	filter, err := translate.ModuleFilter(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrInvalidOptions, err)
	}
	filter.Disabled = true
	var serving map[string]bool
	if routes != nil {
		serving = map[string]bool{}
		for _, rc := range routes {
			if routesModule(rc) {
				serving[rc.GetName()] = true
			}
		}
	}
	wants := func(h *hcmv3.HttpConnectionManager) bool {
		if serving == nil {
			return true
		}
		if rc := h.GetRouteConfig(); rc != nil {
			return routesModule(rc)
		}
		return serving[h.GetRds().GetRouteConfigName()]
	}
	out = make([]*listenerv3.Listener, 0, len(listeners))
	var errs []error
	for _, l := range listeners {
		nl, err := moduleListener(l, filter, wants)
		if err != nil {
			errs = append(errs, fmt.Errorf("listener %q: %w", l.GetName(), err))
			nl = l
		}
		out = append(out, nl)
	}
	return out, errors.Join(errs...), nil
}

// moduleListener returns l with filter inserted into every HCM wants
// selects (see ModuleListeners), or l itself when none changed.
func moduleListener(l *listenerv3.Listener, filter *hcmv3.HttpFilter, wants func(*hcmv3.HttpConnectionManager) bool) (*listenerv3.Listener, error) {
	var out *listenerv3.Listener
	chains := func(x *listenerv3.Listener) []*listenerv3.FilterChain {
		cs := append([]*listenerv3.FilterChain(nil), x.GetFilterChains()...)
		if x.GetDefaultFilterChain() != nil {
			cs = append(cs, x.GetDefaultFilterChain())
		}
		return cs
	}
	in := chains(l)
	for ci, fc := range in {
		for fi, f := range fc.GetFilters() {
			tc := f.GetTypedConfig()
			if tc == nil || (f.GetName() != hcmFilterName && !tc.MessageIs((*hcmv3.HttpConnectionManager)(nil))) {
				continue
			}
			var h hcmv3.HttpConnectionManager
			if err := tc.UnmarshalTo(&h); err != nil {
				return nil, fmt.Errorf("filter chain %q: %w", fc.GetName(), err)
			}
			if !wants(&h) || hasFilter(&h, translate.ModuleFilterName) {
				continue
			}
			at := -1
			for i, hf := range h.GetHttpFilters() {
				if hf.GetName() == routerFilterName {
					at = i
				}
			}
			if at < 0 {
				return nil, fmt.Errorf("filter chain %q: %w", fc.GetName(), ErrNoRouter)
			}
			h.HttpFilters = append(h.HttpFilters[:at:at], append([]*hcmv3.HttpFilter{filter}, h.HttpFilters[at:]...)...)
			a, err := anypb.New(&h)
			if err != nil {
				return nil, err
			}
			if out == nil {
				out = proto.Clone(l).(*listenerv3.Listener)
			}
			chains(out)[ci].GetFilters()[fi].ConfigType = &listenerv3.Filter_TypedConfig{TypedConfig: a}
		}
	}
	if out == nil {
		return l, nil
	}
	if err := out.ValidateAll(); err != nil {
		return nil, err
	}
	return out, nil
}

func hasFilter(h *hcmv3.HttpConnectionManager, name string) bool {
	for _, f := range h.GetHttpFilters() {
		if f.GetName() == name {
			return true
		}
	}
	return false
}

// routesModule reports whether rc has a route, or a weighted cluster,
// carrying the module's per-route configuration.
func routesModule(rc *routev3.RouteConfiguration) bool {
	for _, vh := range rc.GetVirtualHosts() {
		for _, r := range vh.GetRoutes() {
			if r.GetTypedPerFilterConfig()[translate.ModuleFilterName] != nil {
				return true
			}
			for _, w := range r.GetRoute().GetWeightedClusters().GetClusters() {
				if w.GetTypedPerFilterConfig()[translate.ModuleFilterName] != nil {
					return true
				}
			}
		}
	}
	return false
}
