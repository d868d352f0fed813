package memo

import (
	"testing"

	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"

	"github.com/thaw-dev/thaw/revision"
	"github.com/thaw-dev/thaw/xds/translate"
)

// TestSplitMemberTransitionOnClusterRoutes: with the module's cluster
// routes (translate.ClusterRoutes) a traffic split's member that wakes or
// goes back to zero takes the fast path (EndpointChanges ok) like a
// revision with a host of its own: its cluster and assignment change and
// no virtual host (Transition.KeepsRoutes), whether the member has a tag
// host or none, and back at zero it is confirmed by the resource a full
// translation names (its split host's virtual host). On the ext_proc hold
// path the split host's virtual host names the member's hold cluster, so
// there a member's transition still takes the full translation.
func TestSplitMemberTransitionOnClusterRoutes(t *testing.T) {
	v1 := revision.Key{Namespace: "local", Name: "v1"}
	v2 := revision.Key{Namespace: "local", Name: "v2"} // 10%, no tag: no virtual host of its own
	v3 := revision.Key{Namespace: "local", Name: "v3"} // 0%, tag host zero-shop.test
	for _, module := range []bool{true, false} {
		t.Run(map[bool]string{true: "module", false: "extproc"}[module], func(t *testing.T) {
			cfg := testConfig()
			cfg.IdleHoldPath = true
			if module {
				cfg.Module = &translate.ModuleConfig{Path: "/opt/thaw/thaw-activator.so", Node: "n",
					StateURL: "http://127.0.0.1:9901/activator/v1/state", ReportURL: "http://127.0.0.1:9901/activator/v1/report"}
			}
			reg := revision.NewRegistry(revision.RegistryOptions{})
			for _, m := range []struct {
				key     revision.Key
				percent int32
				tag     string
			}{{v1, 90, ""}, {v2, 10, ""}, {v3, 0, "zero"}} {
				spec := revision.DefaultSpec()
				spec.Hosts, spec.Port, spec.Tag, spec.TrafficPercent = []string{"shop.test"}, 8080, m.tag, pct(m.percent)
				reg.Upsert(m.key, spec)
			}
			reg.SetBackends(v1, []revision.Backend{{Address: "127.0.0.1", Port: 8080, Ready: true}})
			reg.SetSynced()
			tr, err := New(&cfg, true)
			if err != nil {
				t.Fatal(err)
			}
			prev := reg.Snapshot()
			if res, err := tr.Translate(prev); res == nil || err != nil {
				t.Fatalf("translate: %v", err)
			}
			// step changes one member's backends and reports whether the
			// fast path took it; on it, the Transition must keep routes.
			step := func(key revision.Key, backends []revision.Backend) bool {
				t.Helper()
				reg.SetBackends(key, backends)
				snap := reg.Snapshot()
				changed, ok, err := tr.EndpointChanges(prev, snap, nil)
				if err != nil {
					t.Fatal(err)
				}
				if !ok {
					if res, _ := tr.Translate(snap); res == nil {
						t.Fatal("translate failed")
					}
					prev = snap
					return false
				}
				prev = snap
				if len(changed) != 1 || changed[0].Key != key {
					t.Fatalf("EndpointChanges changed %v, want only %s", changed, key)
				}
				x, ok, err := tr.Transition(key)
				if err != nil || !ok {
					t.Fatalf("Transition(%s): %v, %v", key, ok, err)
				}
				if !x.KeepsRoutes || x.Idle != (len(backends) == 0) || (x.Cluster == nil && x.ClusterEnc == nil) != x.Idle {
					t.Fatalf("Transition(%s) = idle %v, keeps routes %v, cluster %v; want the cluster alone", key, x.Idle, x.KeepsRoutes,
						x.Cluster != nil || x.ClusterEnc != nil)
				}
				return true
			}
			up := []revision.Backend{{Address: "127.0.0.2", Port: 8080, Ready: true}}
			for _, c := range []struct {
				what     string
				key      revision.Key
				backends []revision.Backend
			}{
				{"v2 wakes", v2, up},
				{"v3 wakes by its tag host", v3, up},
				{"v2 back to zero", v2, nil},
				{"v3 back to zero", v3, nil},
				{"v2 wakes again", v2, up},
			} {
				if fast := step(c.key, c.backends); fast != module {
					t.Fatalf("%s: fast path %v, want %v", c.what, fast, module)
				}
				fresh, err := New(&cfg, true)
				if err != nil {
					t.Fatal(err)
				}
				if res, _ := fresh.Translate(prev); res == nil {
					t.Fatal("fresh translation failed")
				}
				for _, k := range []revision.Key{v1, v2, v3} {
					want, wantIdle := fresh.Confirm(k)
					got, gotIdle := tr.Confirm(k)
					if want != got || wantIdle != gotIdle {
						t.Fatalf("%s: Confirm(%s) = %+v %v, full translation %+v %v", c.what, k, got, gotIdle, want, wantIdle)
					}
				}
			}
			if ref, idle := tr.Confirm(v3); !idle || ref.TypeURL != resourcev3.VirtualHostType {
				t.Fatalf("v3 at zero confirmed by %+v (idle %v), want its tag host's virtual host", ref, idle)
			}
		})
	}
}
