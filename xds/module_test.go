package xds

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"

	"github.com/thaw-dev/thaw/revision"
)

// moduleTestConfig is testConfig with the activator module on.
func moduleTestConfig() Config {
	cfg := testConfig()
	cfg.Module = &ModuleConfig{Path: "/opt/thaw/thaw-activator.so", StateURL: "http://127.0.0.1:9901/activator/v1/state",
		ReportURL: "http://127.0.0.1:9901/activator/v1/report", Node: "thaw-local"}
	return cfg
}

// TestTranslateModuleGolden: with Config.Module, thaw_http runs the
// module filter before the router, each revision route (and each
// weighted cluster of a split) names its revision, and every revision's
// endpoints are its ready backends whatever the mode.
func TestTranslateModuleGolden(t *testing.T) {
	for _, tt := range []struct {
		name   string
		snap   *revision.Snapshot
		inline bool
	}{
		{name: "module", snap: snapshotOf(
			rev("default", "warm", revision.ModeServe, []string{"warm.example.com"}, ready("10.0.0.1", 8080), ready("10.0.0.3", 0)),
			rev("default", "held", revision.ModeProxy, []string{"held.example.com"}, ready("10.0.0.2", 8080)),
			rev("default", "cold", revision.ModeProxy, []string{"cold.example.com"},
				revision.Backend{Address: "10.0.0.9", Port: 8080, Ready: false}),
		)},
		{name: "module_split", inline: true, snap: snapshotOf(
			withSpec(rev("shop", "v1", revision.ModeServe, []string{"shop.example.com"}, ready("10.0.0.1", 8080)),
				func(s *revision.Spec) { s.TrafficPercent = percent(90) }),
			withSpec(rev("shop", "v2", revision.ModeProxy, []string{"shop.example.com"}),
				func(s *revision.Spec) { s.TrafficPercent = percent(10) }),
		)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := moduleTestConfig()
			cfg.InlineRoutes = tt.inline
			res, err := Translate(tt.snap, cfg)
			if err != nil {
				t.Fatalf("Translate: %v", err)
			}
			checkGolden(t, filepath.Join("testdata", "translate_"+tt.name+".yaml"), goldenYAML(t, res))
		})
	}
}

func TestModuleConfigValidate(t *testing.T) {
	good := *moduleTestConfig().Module
	for name, edit := range map[string]func(*ModuleConfig){
		"relative path":  func(m *ModuleConfig) { m.Path = "bin/thaw-activator.so" },
		"bad state URL":  func(m *ModuleConfig) { m.StateURL = "unix:///tmp/x" },
		"bad report URL": func(m *ModuleConfig) { m.ReportURL = "" },
		"no node":        func(m *ModuleConfig) { m.Node = "" },
		"negative":       func(m *ModuleConfig) { m.RetryAfterSeconds = -1 },
	} {
		m := good
		edit(&m)
		cfg := testConfig()
		cfg.Module = &m
		if err := cfg.Validate(); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%s: Validate = %v, want ErrInvalidConfig", name, err)
		}
	}
	cfg := moduleTestConfig()
	if err := cfg.Validate(); err != nil {
		t.Fatalf("valid module config refused: %v", err)
	}
}

// TestConfirmedByNode: ConfirmedBy answers per node: a backend's
// endpoints ACKed by one Envoy are confirmed for it, not for another
// Envoy that has not ACKed them yet, nor for an unknown node.
func TestConfirmedByNode(t *testing.T) {
	f := startFixture(t, componentConfig())
	f.upsert(keyA, revision.ModeServe, []string{"a.example.com"})
	f.reg.SetSynced()
	c1, c2 := dialDelta(t, f.addr, "envoy-1"), dialDelta(t, f.addr, "envoy-2")
	syncAll(t, c1)
	syncAll(t, c2)
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := f.srv.WaitConfirmed(ctx, keyA, generation(f, keyA)); err != nil {
		t.Fatal(err)
	}
	f.reg.SetBackends(keyA, []revision.Backend{ready("10.0.0.1", 80)})
	gen := generation(f, keyA)
	u1, u2 := c1.recvType(resourcev3.EndpointType), c2.recvType(resourcev3.EndpointType)
	if f.srv.ConfirmedBy("envoy-1", keyA, gen) {
		t.Fatal("confirmed for envoy-1 before its ACK")
	}
	c1.ack(u1)
	waitFor(t, "envoy-1 confirmed", func() bool { return f.srv.ConfirmedBy("envoy-1", keyA, gen) })
	if f.srv.ConfirmedBy("envoy-2", keyA, gen) {
		t.Fatal("confirmed for envoy-2, which has not ACKed")
	}
	if f.srv.ConfirmedBy("envoy-3", keyA, gen) {
		t.Fatal("confirmed for a node with no stream")
	}
	ch := f.srv.Changed()
	c2.ack(u2)
	select {
	case <-ch:
	case <-ctx.Done():
		t.Fatal("Changed not closed by an ACK")
	}
	waitFor(t, "envoy-2 confirmed", func() bool { return f.srv.ConfirmedBy("envoy-2", keyA, gen) })
	if f.srv.ConfirmedBy("envoy-1", keyA, gen+1) {
		t.Fatal("confirmed for a generation not applied yet")
	}
}
