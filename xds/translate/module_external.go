package translate

import (
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/thaw-dev/thaw/revision"
)

// ModuleRouteConfig is the typed_per_filter_config that names revision key
// to the activator module (key ModuleFilterName, a
// DynamicModuleFilterPerRoute whose filter_config is state.RouteConfig):
// what thaw's own revision routes and split entries carry with
// Config.Module, for an external Envoy's routes (Envoy Gateway's, package
// egext). Nil when cfg has no Module.
func ModuleRouteConfig(cfg *Config, key revision.Key) map[string]*anypb.Any {
	return moduleRouteConfig(cfg, key)
}
