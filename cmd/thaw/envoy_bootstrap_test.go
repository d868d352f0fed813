package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/thaw-dev/thaw/envoy"
)

func TestEnvoyBootstrapCmd(t *testing.T) {
	cmd := newEnvoyBootstrapCmd()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"--node-id", "envoy-7", "--xds-address", "127.0.0.1:18000", "--admin-port", "19000"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if err := envoy.Validate(out.Bytes()); err != nil {
		t.Fatalf("printed bootstrap invalid: %v", err)
	}
	for _, s := range []string{`id: "envoy-7"`, "port_value: 18000", "port_value: 19000", "api_type: DELTA_GRPC"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("output lacks %q", s)
		}
	}
}

func TestEnvoyBootstrapCmdRequiresFlags(t *testing.T) {
	cmd := newEnvoyBootstrapCmd()
	cmd.SetOut(&bytes.Buffer{})
	cmd.SetErr(&bytes.Buffer{})
	cmd.SetArgs([]string{"--node-id", "envoy-7"})
	if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), "xds-address") {
		t.Fatalf("error = %v, want a missing --xds-address error", err)
	}
}

func TestEnvoyBootstrapCmdModuleBridge(t *testing.T) {
	cmd := newEnvoyBootstrapCmd()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"--node-id", "envoy-7", "--xds-address", "127.0.0.1:18000", "--module-address", "127.0.0.1:18001",
		"--module-bridge-port", "18019"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"name: thaw_module", "port_value: 18001", "port_value: 18019", "envoy.filters.network.tcp_proxy"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("output lacks %q", s)
		}
	}
	// Envoy Gateway's merge carries the bridge too, beside the
	// activator's internal listeners.
	cmd = newEnvoyBootstrapCmd()
	out.Reset()
	cmd.SetOut(&out)
	cmd.SetErr(&bytes.Buffer{})
	cmd.SetArgs([]string{"--envoy-gateway", "--xds-address", "127.0.0.1:18000", "--module-address", "127.0.0.1:18001"})
	if err := cmd.Execute(); err != nil {
		t.Fatalf("module bridge for Envoy Gateway: %v", err)
	}
	for _, s := range []string{"name: thaw_module", "port_value: 18001", "port_value: 18009", "name: thaw_activator_wake"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("Envoy Gateway merge lacks %q", s)
		}
	}
	if strings.Contains(out.String(), "dynamic_resources") {
		t.Error("Envoy Gateway merge sets dynamic_resources (EG refuses it)")
	}
}
