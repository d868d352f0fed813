package translate

import (
	"encoding/json"
	"fmt"
	"net/url"
	"path/filepath"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	dmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/dynamic_modules/v3"
	dmfilterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/dynamic_modules/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/thaw-dev/thaw/module/state"
	"github.com/thaw-dev/thaw/revision"
)

// ModuleFilterName is the HTTP filter name of the activator module on
// listener thaw_http, the key of each revision route's per-route
// configuration, and the filter name the module registers
// (module/activator).
const ModuleFilterName = "thaw_activator"

// ModuleConfig turns on the activator module (module/activator, loaded by
// Envoy's dynamic_modules HTTP filter) instead of ext_proc: Config.Module.
type ModuleConfig struct {
	// Path is the absolute path of the module's shared object
	// (bin/thaw-activator.so) on the Envoy's machine.
	Path string
	// StateURL is thaw's state stream (modsvc.StatePath), "http://host:port/path".
	StateURL string
	// ReportURL takes the module's counts and pokes (modsvc.ReportPath).
	ReportURL string
	// Node is the Envoy's xDS node id: thaw sends a backend to this
	// Envoy's module only once this node ACKed the ClusterLoadAssignment
	// listing it (modsvc.Confirmer). Each module uses its own Envoy's
	// --service-node (state.ServiceNode) instead when Envoy has one (a
	// fleet, where every Envoy gets the same listener), so Node only names
	// an Envoy started without it; empty leaves the node to --service-node.
	Node string
	// ReportInterval is how often the module reports counts (0: 1 s).
	ReportInterval time.Duration
	// RetryAfterSeconds is the Retry-After of the module's 503 answers
	// (0: 1).
	RetryAfterSeconds int
}

// Validate checks the module settings; errors wrap ErrInvalidConfig.
func (m *ModuleConfig) Validate() error {
	if m.Path == "" || !filepath.IsAbs(m.Path) {
		return fmt.Errorf("%w: Module.Path %q: want an absolute path to thaw-activator.so", ErrInvalidConfig, m.Path)
	}
	for name, u := range map[string]string{"StateURL": m.StateURL, "ReportURL": m.ReportURL} {
		p, err := url.Parse(u)
		if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
			return fmt.Errorf("%w: Module.%s %q: want an http(s) URL", ErrInvalidConfig, name, u)
		}
	}
	if m.ReportInterval < 0 || m.RetryAfterSeconds < 0 {
		return fmt.Errorf("%w: Module.ReportInterval and RetryAfterSeconds must be >= 0", ErrInvalidConfig)
	}
	return nil
}

// moduleSource is the module's dynamic_module_config: the shared object
// loaded from Path, never closed (Go's runtime cannot be unloaded).
func (m *ModuleConfig) moduleSource() *dmv3.DynamicModuleConfig {
	return &dmv3.DynamicModuleConfig{DoNotClose: true, Module: &corev3.AsyncDataSource{
		Specifier: &corev3.AsyncDataSource_Local{Local: &corev3.DataSource{
			Specifier: &corev3.DataSource_Filename{Filename: m.Path}}}}}
}

// ModuleFilter returns the activator module's HTTP filter for listener
// thaw_http (placed before the router): its filter_config (JSON,
// state.FilterConfig) names thaw's state stream, the report URL and the
// node; HoldTimeoutMs is the hold budget, for revisions thaw has not sent
// yet. Routes without per-route configuration (the 404 catch-all) pass
// through it untouched.
func ModuleFilter(cfg *Config) (*hcmv3.HttpFilter, error) {
	m := cfg.Module
	fc := state.FilterConfig{StateURL: m.StateURL, ReportURL: m.ReportURL, Node: m.Node,
		HoldTimeoutMs: cfg.HoldBudget.Milliseconds(), RetryAfterSeconds: m.RetryAfterSeconds,
		ReportIntervalMs: m.ReportInterval.Milliseconds()}
	js, err := json.Marshal(fc)
	if err != nil {
		return nil, err
	}
	if _, err := state.DecodeFilterConfig(js); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	conf, err := anypb.New(wrapperspb.String(string(js)))
	if err != nil {
		return nil, err
	}
	a, err := toAny(&dmfilterv3.DynamicModuleFilter{DynamicModuleConfig: m.moduleSource(),
		FilterName: ModuleFilterName, FilterConfig: conf})
	if err != nil {
		return nil, err
	}
	return &hcmv3.HttpFilter{Name: ModuleFilterName, ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: a}}, nil
}

// moduleRouteConfig returns the typed_per_filter_config naming the
// revision of a revision route (or of a weighted cluster of a split
// route), or nil without Config.Module: the revision comes from thaw's
// route configuration, never from a client header.
func moduleRouteConfig(cfg *Config, key revision.Key) map[string]*anypb.Any {
	if cfg == nil || cfg.Module == nil {
		return nil
	}
	js, err := json.Marshal(state.RouteConfig{Revision: key.String(), Cluster: routeConfigCluster(cfg, key)})
	if err != nil {
		panic(err) // a struct of one string always marshals
	}
	conf, err := anypb.New(wrapperspb.String(string(js)))
	if err != nil {
		panic(err)
	}
	a, err := anypb.New(&dmfilterv3.DynamicModuleFilterPerRoute{DynamicModuleConfig: cfg.Module.moduleSource(),
		FilterName: ModuleFilterName, FilterConfig: conf})
	if err != nil {
		panic(err)
	}
	return map[string]*anypb.Any{ModuleFilterName: a}
}

// moduleLoadAssignment is a revision's ClusterLoadAssignment with the
// module: its ready backends whatever the mode (the module holds,
// limits and pins every request itself, so proxy mode needs no internal
// listener, and a backend must be in the cluster before the module may
// pin it: strict override host). No ready backend: no endpoint (the
// module holds the requests).
func moduleLoadAssignment(rev *revision.Revision, name string) (*endpointv3.ClusterLoadAssignment, error) {
	return ServeLoadAssignment(name, rev.Backends, rev.Spec.Port)
}
