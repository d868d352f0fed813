package revision

import (
	"testing"
	"time"
)

func TestSetWakeFailure(t *testing.T) {
	key := Key{Namespace: "default", Name: "demo"}
	reg := NewRegistry(RegistryOptions{})
	v := reg.Snapshot().Version
	reg.SetWakeFailure(key, &WakeFailure{Reason: WakeProcessExited})
	if got := reg.Snapshot(); got.Version != v || got.Get(key) != nil {
		t.Fatalf("on an unknown key: version %d (was %d), revision %v; want nothing published or created", got.Version, v, got.Get(key))
	}

	spec := DefaultSpec()
	spec.Hosts = []string{"demo.example.com"}
	reg.Upsert(key, spec)
	gen := reg.Snapshot().Get(key).Generation
	at := time.Unix(100, 0)
	f := &WakeFailure{Reason: WakeProcessExited, Message: "exit status 3", RetryAt: at}
	reg.SetWakeFailure(key, f)
	f.Message = "changed by the caller"
	rev := reg.Snapshot().Get(key)
	if rev.WakeFailure == nil || rev.WakeFailure.Message != "exit status 3" || !rev.WakeFailure.RetryAt.Equal(at) {
		t.Fatalf("WakeFailure = %+v, want the value as set (a copy)", rev.WakeFailure)
	}
	if rev.Generation != gen {
		t.Fatalf("Generation %d -> %d: a wake failure is not for Envoy", gen, rev.Generation)
	}
	v = reg.Snapshot().Version
	reg.SetWakeFailure(key, &WakeFailure{Reason: WakeProcessExited, Message: "exit status 3", RetryAt: at})
	if reg.Snapshot().Version != v {
		t.Fatal("setting an equal failure published a snapshot")
	}
	if got := rev.WakeFailure.String(); got != "ProcessExited: exit status 3" {
		t.Fatalf("String() = %q", got)
	}
	reg.SetWakeFailure(key, nil)
	if rev := reg.Snapshot().Get(key); rev.WakeFailure != nil {
		t.Fatalf("after clearing: %+v", rev.WakeFailure)
	}
}
