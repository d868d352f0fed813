package translate

import (
	"encoding/json"

	dmfilterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/dynamic_modules/v3"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/thaw-dev/thaw/module/state"
	"github.com/thaw-dev/thaw/revision"
)

// moduleRouteParts are the parts of a revision route's per-route
// configuration for the activator module (moduleRouteConfig) that do not
// depend on the revision, encoded once per Config (Parts). A
// DynamicModuleFilterPerRoute is encoded in field order: field 1
// (dynamic_module_config: the module's source, constant) in head, field 3
// (filter_config: the revision's state.RouteConfig as a StringValue in an
// Any) built per revision, field 4 (filter_name, constant) in tail. Per
// revision that costs one JSON object and a few length prefixes instead of
// two nested proto marshals and the module source's messages (~2.2 µs of
// ~24 µs per revision of the first apply at 100,000,
// BenchmarkFirstApplyOnDemand100k). The bytes are those of
// moduleRouteConfig's (TestModuleRouteFastSameBytes).
type moduleRouteParts struct {
	// path is the ModuleConfig.Path head encodes (moduleSource reads
	// nothing else).
	path       string
	head, tail []byte
}

var (
	perRouteTypeURL    = typeURLOf(&dmfilterv3.DynamicModuleFilterPerRoute{})
	stringValueTypeURL = typeURLOf(&wrapperspb.StringValue{})
)

// typeURLOf returns the type URL anypb.New gives m.
func typeURLOf(m proto.Message) string {
	return "type.googleapis.com/" + string(m.ProtoReflect().Descriptor().FullName())
}

// newModuleRouteParts encodes the constant fields of m's per-route
// configuration; nil without a module.
func newModuleRouteParts(m *ModuleConfig) *moduleRouteParts {
	if m == nil {
		return nil
	}
	head, err := proto.Marshal(&dmfilterv3.DynamicModuleFilterPerRoute{DynamicModuleConfig: m.moduleSource()})
	if err != nil {
		panic(err) // constant messages of strings and a bool always marshal
	}
	tail, err := proto.Marshal(&dmfilterv3.DynamicModuleFilterPerRoute{FilterName: ModuleFilterName})
	if err != nil {
		panic(err)
	}
	return &moduleRouteParts{path: m.Path, head: head, tail: tail}
}

// routeConfig returns what moduleRouteConfig(cfg, key) returns, from the
// encoded parts; name is revision.ClusterName(key).
func (p *moduleRouteParts) routeConfig(cfg *Config, key revision.Key, name string) map[string]*anypb.Any {
	rc := state.RouteConfig{Revision: key.String()}
	if ClusterRoutes(cfg) {
		rc.Cluster = name
	}
	js, err := json.Marshal(rc)
	if err != nil {
		panic(err) // a struct of strings always marshals
	}
	// One buffer, written in order: head; field 3, an Any {type_url: 1,
	// value: 2}, whose value is a StringValue {value: 1} holding js (never
	// empty: an object); tail.
	bt := protowire.BytesType
	sv := protowire.SizeTag(1) + protowire.SizeBytes(len(js))
	inner := protowire.SizeTag(1) + protowire.SizeBytes(len(stringValueTypeURL)) + protowire.SizeTag(2) + protowire.SizeBytes(sv)
	v := make([]byte, 0, len(p.head)+protowire.SizeTag(3)+protowire.SizeBytes(inner)+len(p.tail))
	v = append(v, p.head...)
	v = protowire.AppendVarint(protowire.AppendTag(v, protoreflect.FieldNumber(3), bt), uint64(inner))
	v = protowire.AppendString(protowire.AppendTag(v, 1, bt), stringValueTypeURL)
	v = protowire.AppendVarint(protowire.AppendTag(v, 2, bt), uint64(sv))
	v = protowire.AppendBytes(protowire.AppendTag(v, 1, bt), js)
	v = append(v, p.tail...)
	return map[string]*anypb.Any{ModuleFilterName: {TypeUrl: perRouteTypeURL, Value: v}}
}

// moduleRouteConfig is moduleRouteConfig(cfg, key) for a revision's own
// route, from p's encoded parts; name is revision.ClusterName(key).
func (p *Parts) moduleRouteConfig(cfg *Config, key revision.Key, name string) map[string]*anypb.Any {
	if cfg == nil || cfg.Module == nil {
		return nil
	}
	if p.moduleRoute == nil || p.moduleRoute.path != cfg.Module.Path { // Parts of another Config
		return moduleRouteConfig(cfg, key)
	}
	return p.moduleRoute.routeConfig(cfg, key, name)
}
