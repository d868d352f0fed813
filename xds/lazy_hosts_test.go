package xds

import (
	"testing"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"go.uber.org/zap"

	"github.com/thaw-dev/thaw/xds/encoded"
)

func lazyVH(domain string) *encoded.Resource {
	vh := &routev3.VirtualHost{Name: "thaw_http/a", Domains: []string{domain}}
	return encoded.NewLazy(vh.Domains, func() (types.Resource, error) { return vh, nil })
}

// TestDiffLazyHosts: the diff of lazily encoded virtual hosts
// (change.addLazy) leaves a host held by pointer alone, keeps a change to
// a host never encoded unencoded (no version to wait for), and encodes a
// host replacing an encoded one, a change only when its bytes differ.
func TestDiffLazyHosts(t *testing.T) {
	cfg := componentConfig()
	s := NewServer(ServerOptions{Config: cfg, Logger: zap.NewNop()})
	const name = "thaw_http/a"
	vhType := resourcev3.VirtualHostType
	apply := func(c *change) {
		t.Helper()
		if err := s.replace(c); err != nil {
			t.Fatal(err)
		}
	}
	a := lazyVH("a.example.com")
	c := s.diffEncoded(vhType, map[string]*encoded.Resource{name: a})
	if c.lazy[name] != a || c.ver[name] != "" || len(c.added) != 1 {
		t.Fatalf("new lazy host: lazy %v, version %q, added %v", c.lazy, c.ver[name], c.added)
	}
	apply(c)
	if c := s.diffEncoded(vhType, map[string]*encoded.Resource{name: a}); len(c.upd) != 0 {
		t.Fatalf("same pointer: %d changes, want none", len(c.upd))
	}
	b := lazyVH("b.example.com")
	if c := s.diffEncoded(vhType, map[string]*encoded.Resource{name: b}); c.lazy[name] != b || c.ver[name] != "" {
		t.Fatalf("host never encoded, changed: version %q, want none (not encoded)", c.ver[name])
	} else {
		apply(c)
	}
	if len(s.deltas[vhType].EncodedVersionsOf([]string{name})) != 0 {
		t.Fatal("host encoded by the diff, want unencoded")
	}
	// Sent to an Envoy: encoded (VersionsOf encodes it).
	held := s.deltas[vhType].VersionsOf([]string{name})[name]
	if c := s.diffEncoded(vhType, map[string]*encoded.Resource{name: lazyVH("b.example.com")}); len(c.upd) != 0 {
		t.Fatalf("same bytes after the host was encoded: %d changes, want none", len(c.upd))
	}
	d := lazyVH("d.example.com")
	c = s.diffEncoded(vhType, map[string]*encoded.Resource{name: d})
	_, want, err := d.Get()
	if err != nil || c.ver[name] != want || c.ver[name] == held {
		t.Fatalf("encoded host changed: version %q, want %q (held %q, %v)", c.ver[name], want, held, err)
	}
}
