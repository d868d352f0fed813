package main

import (
	"strings"
	"testing"
)

func TestFleetModuleFlags(t *testing.T) {
	if m, err := (&fleetModuleFlags{kind: "extproc"}).moduleConfig(); m != nil || err != nil {
		t.Fatalf("extproc: %v %v, want no module", m, err)
	}
	ok := fleetModuleFlags{kind: "module", path: defaultFleetModulePath, address: "10.0.0.5:18001", bridgePort: 18009}
	m, err := ok.moduleConfig()
	if err != nil {
		t.Fatal(err)
	}
	// Every Envoy gets the same filter: its loopback bridge, and no node
	// (each module takes its own Envoy's --service-node).
	if m.Path != defaultFleetModulePath || m.StateURL != "http://127.0.0.1:18009/activator/v1/state" ||
		m.ReportURL != "http://127.0.0.1:18009/activator/v1/report" || m.Node != "" {
		t.Fatalf("module config %+v", m)
	}
	if err := m.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
	for _, tc := range []struct {
		mutate    func(*fleetModuleFlags)
		wantInErr string
	}{
		{func(f *fleetModuleFlags) { f.kind = "grpc" }, "want extproc or module"},
		{func(f *fleetModuleFlags) { f.path = "thaw-activator.so" }, "absolute path"},
		{func(f *fleetModuleFlags) { f.bridgePort = 0 }, "--module-bridge-port"},
		{func(f *fleetModuleFlags) { f.address = "10.0.0.5:0" }, "fixed port"},
		{func(f *fleetModuleFlags) { f.address = "nohost" }, "--module-address"},
	} {
		f := ok
		tc.mutate(&f)
		if _, err := f.moduleConfig(); err == nil || !strings.Contains(err.Error(), tc.wantInErr) {
			t.Errorf("%+v: error %v, want one containing %q", f, err, tc.wantInErr)
		}
	}
}
