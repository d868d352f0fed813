package translate

import (
	"bytes"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/thaw-dev/thaw/revision"
)

// TestModuleRouteFastSameBytes checks that a revision route's per-route
// configuration built from the encoded parts (module_route.go) is, byte
// for byte, the one moduleRouteConfig marshals, with and without cluster
// routes, for keys of several lengths (the length prefixes change with
// them), and that Parts of another module path fall back to it.
func TestModuleRouteFastSameBytes(t *testing.T) {
	long := string(bytes.Repeat([]byte("a"), 200))
	keys := []revision.Key{{Namespace: "ns", Name: "a"}, {Namespace: "ns-0", Name: "app-12345"},
		{Namespace: "n", Name: long}, {Namespace: long[:60], Name: long[:63]}}
	for _, idle := range []bool{false, true} {
		cfg := DefaultConfig()
		cfg.IdleHoldPath = idle
		cfg.Module = &ModuleConfig{Path: "/opt/thaw/thaw-activator.so", StateURL: "http://127.0.0.1:9901/activator/v1/state",
			ReportURL: "http://127.0.0.1:9901/activator/v1/report", Node: "envoy-1"}
		pt := NewParts(&cfg)
		other := cfg
		other.Module = &ModuleConfig{Path: "/opt/other.so"}
		for _, k := range keys {
			name := revision.ClusterName(k)
			for _, c := range []struct {
				cfg *Config
				got *Parts
			}{{&cfg, pt}, {&other, pt}} {
				want := moduleRouteConfig(c.cfg, k)[ModuleFilterName]
				got := c.got.moduleRouteConfig(c.cfg, k, name)[ModuleFilterName]
				if got.GetTypeUrl() != want.GetTypeUrl() || !bytes.Equal(got.GetValue(), want.GetValue()) {
					t.Fatalf("idle=%v key %s path %s: per-route config differs:\n got %x\nwant %x", idle, k, c.cfg.Module.Path,
						got.GetValue(), want.GetValue())
				}
				a, err := proto.MarshalOptions{Deterministic: true}.Marshal(got)
				if err != nil {
					t.Fatal(err)
				}
				b, _ := proto.MarshalOptions{Deterministic: true}.Marshal(want)
				if !bytes.Equal(a, b) {
					t.Fatalf("key %s: Any encodings differ", k)
				}
			}
		}
	}
	var noModule Config = DefaultConfig()
	if NewParts(&noModule).moduleRouteConfig(&noModule, keys[0], "x") != nil {
		t.Fatal("a per-route config without a module")
	}
}
