package local

import (
	"testing"

	"github.com/thaw-dev/thaw/revision"
)

// TestExampleConfig keeps examples/local.yaml valid.
func TestExampleConfig(t *testing.T) {
	cfg, err := Load("../../examples/local.yaml", revision.DefaultSpec())
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Err(); err != nil {
		t.Fatal(err)
	}
	if got := keys(cfg.Revisions); len(got) != 3 {
		t.Fatalf("revisions = %q, want 3", got)
	}
	for _, rc := range cfg.Revisions {
		if want := revision.ProtocolHTTP1; rc.Key.Name == "grpc" {
			if rc.Spec.Protocol != revision.ProtocolH2C {
				t.Errorf("grpc revision protocol = %q, want h2c", rc.Spec.Protocol)
			}
		} else if rc.Spec.Protocol != want {
			t.Errorf("%s protocol = %q, want %q", rc.Key, rc.Spec.Protocol, want)
		}
	}
}
