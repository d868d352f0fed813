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
	if got := keys(cfg.Revisions); len(got) != 2 {
		t.Fatalf("revisions = %q, want 2", got)
	}
}
