package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestActivatorFlags(t *testing.T) {
	so := filepath.Join(t.TempDir(), "thaw-activator.so")
	if err := os.WriteFile(so, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if m, err := (&activatorFlags{kind: "extproc"}).moduleConfig("127.0.0.1:9901", "n"); m != nil || err != nil {
		t.Fatalf("extproc: %v %v, want no module", m, err)
	}
	m, err := (&activatorFlags{kind: "module", module: so}).moduleConfig("0.0.0.0:9901", "thaw-local")
	if err != nil {
		t.Fatal(err)
	}
	if m.Path != so || m.StateURL != "http://127.0.0.1:9901/activator/v1/state" ||
		m.ReportURL != "http://127.0.0.1:9901/activator/v1/report" || m.Node != "thaw-local" {
		t.Fatalf("module config %+v", m)
	}
	for _, tc := range []struct {
		f         activatorFlags
		admin     string
		wantInErr string
	}{
		{activatorFlags{kind: "grpc"}, "127.0.0.1:9901", "want extproc or module"},
		{activatorFlags{kind: "module", module: so + ".missing"}, "127.0.0.1:9901", "make build"},
		{activatorFlags{kind: "module", module: so}, "127.0.0.1:0", "fixed port"},
	} {
		if _, err := tc.f.moduleConfig(tc.admin, "n"); err == nil || !strings.Contains(err.Error(), tc.wantInErr) {
			t.Errorf("%+v %s: error %v, want one containing %q", tc.f, tc.admin, err, tc.wantInErr)
		}
	}
}
