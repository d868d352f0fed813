package translate

import (
	"errors"
	"testing"

	"github.com/thaw-dev/thaw/revision"
)

// httpFilters returns the HTTP filter names of listener thaw_http for cfg.
func httpFilters(t *testing.T, cfg Config) []string {
	t.Helper()
	hcm := httpConnectionManager(t, cfg)
	var names []string
	for _, f := range hcm.GetHttpFilters() {
		names = append(names, f.GetName())
	}
	return names
}

func TestOnDemandHosts(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Module = &ModuleConfig{Path: "/m.so", StateURL: "http://127.0.0.1:1/state", ReportURL: "http://127.0.0.1:1/report"}
	if got := httpFilters(t, cfg); len(got) != 2 || got[0] == OnDemandFilterName {
		t.Fatalf("flag off: filters %v, want no on_demand filter", got)
	}
	cfg.OnDemandHosts = true
	got := httpFilters(t, cfg)
	if len(got) != 3 || got[0] != OnDemandFilterName || got[1] != ModuleFilterName {
		t.Fatalf("flag on: filters %v, want on_demand first, then the module", got)
	}

	// Route configuration thaw_http: VHDS, and no catch-all when on.
	snap := &revision.Snapshot{Synced: true}
	for _, on := range []bool{false, true} {
		c := DefaultConfig()
		c.OnDemandHosts = on
		res, err := Translate(snap, c)
		if err != nil {
			t.Fatal(err)
		}
		rc := res.Routes[0]
		if rc.GetVhds() == nil {
			t.Fatalf("on=%v: thaw_http without VHDS", on)
		}
		if n := len(rc.GetVirtualHosts()); (on && n != 0) || (!on && n != 1) {
			t.Fatalf("on=%v: %d inline virtual hosts, want %d", on, n, map[bool]int{true: 0, false: 1}[on])
		}
	}
}

func TestOnDemandConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  func(*Config)
		ok   bool
	}{
		{"defaults", func(c *Config) { c.OnDemandHosts = true }, true},
		{"inline routes", func(c *Config) { c.OnDemandHosts, c.InlineRoutes = true, true }, false},
		{"negative evict", func(c *Config) { c.OnDemandEvictAfter = -1 }, false},
		{"negative bound", func(c *Config) { c.OnDemandPerEnvoy = -1 }, false},
	} {
		c := DefaultConfig()
		tc.set(&c)
		err := c.Validate()
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, ErrInvalidConfig)) {
			t.Errorf("%s: Validate() = %v, want ok %v", tc.name, err, tc.ok)
		}
	}
	c := DefaultConfig()
	if c.EvictAfter() != DefaultOnDemandEvictAfter || c.PerEnvoy() != DefaultOnDemandPerEnvoy {
		t.Errorf("defaults: %v %d", c.EvictAfter(), c.PerEnvoy())
	}
}
