package translate

import (
	"errors"
	"path/filepath"
	"testing"

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
	// A fleet's shared listener names no node: each module takes its
	// Envoy's --service-node.
	cfg.Module.Node = ""
	if err := cfg.Validate(); err != nil {
		t.Fatalf("module config without node refused: %v", err)
	}
}
