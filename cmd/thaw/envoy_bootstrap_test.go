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
