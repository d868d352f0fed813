package revision

import (
	"errors"
	"testing"
)

func TestRegistrySetInvalidPublishesOnlyChanges(t *testing.T) {
	r := NewRegistry(RegistryOptions{})
	k := Key{"ns", "bad"}
	r.SetInvalid(k, errors.New("port: must be 1-65535"))
	s := r.Snapshot()
	gen := r.entries[k].generation
	// Platforms build a new error value on every reconcile.
	r.SetInvalid(k, errors.New("port: must be 1-65535"))
	if r.Snapshot() != s || r.entries[k].generation != gen {
		t.Fatal("the same error again published a snapshot")
	}
	r.SetInvalid(k, errors.New("port: must be 1-65535; target: must be > 0"))
	if r.Snapshot() == s || r.Snapshot().Invalid[k].Error() != "port: must be 1-65535; target: must be > 0" {
		t.Fatalf("a changed error was not published: %v", r.Snapshot().Invalid[k])
	}
	// Valid, then the first error again: published.
	r.Upsert(k, validSpec())
	s = r.Snapshot()
	r.SetInvalid(k, errors.New("port: must be 1-65535"))
	if r.Snapshot() == s || r.Snapshot().Get(k) != nil {
		t.Fatal("invalid after valid was not published")
	}
}
