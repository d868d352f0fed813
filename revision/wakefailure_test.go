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

// TestSetActivationFailure: mode control's activation timeout and the
// platform's failure are two facts; a Revision shows the platform's when
// both are set, and neither writer clears the other's. A basis from a
// deleted (or deleted and created again) revision records nothing.
func TestSetActivationFailure(t *testing.T) {
	key := Key{Namespace: "default", Name: "demo"}
	timeout := &WakeFailure{Reason: WakeActivationTimeout, Message: "no backend within 10m0s"}
	exited := &WakeFailure{Reason: WakeProcessExited, Message: "exit status 3"}
	type op struct {
		platform   bool         // SetWakeFailure (else SetActivationFailure)
		f          *WakeFailure // nil clears
		wantChange bool         // SetActivationFailure's answer
		wantShown  string       // Reason shown by the Revision, "" none
		wantPub    bool         // a snapshot was published
	}
	tests := []struct {
		name string
		ops  []op
	}{{
		name: "set and clear",
		ops: []op{
			{f: timeout, wantChange: true, wantShown: WakeActivationTimeout, wantPub: true},
			{f: timeout, wantShown: WakeActivationTimeout},
			{f: nil, wantChange: true, wantPub: true},
			{f: nil},
		},
	}, {
		name: "the platform's failure wins and outlives a clear",
		ops: []op{
			{f: timeout, wantChange: true, wantShown: WakeActivationTimeout, wantPub: true},
			{platform: true, f: exited, wantShown: WakeProcessExited, wantPub: true},
			{f: nil, wantChange: true, wantShown: WakeProcessExited},
			{f: timeout, wantChange: true, wantShown: WakeProcessExited},
			{platform: true, f: nil, wantShown: WakeActivationTimeout, wantPub: true},
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg := NewRegistry(RegistryOptions{})
			spec := DefaultSpec()
			spec.Hosts = []string{"demo.example.com"}
			reg.Upsert(key, spec)
			gen := reg.Snapshot().Get(key).Generation
			for i, o := range tt.ops {
				v := reg.Snapshot().Version
				if o.platform {
					reg.SetWakeFailure(key, o.f)
				} else if got := reg.SetActivationFailure(reg.Snapshot().Get(key), o.f); got != o.wantChange {
					t.Fatalf("op %d: changed = %v, want %v", i, got, o.wantChange)
				}
				rev := reg.Snapshot().Get(key)
				shown := ""
				if rev.WakeFailure != nil {
					shown = rev.WakeFailure.Reason
				}
				if shown != o.wantShown || (reg.Snapshot().Version != v) != o.wantPub {
					t.Fatalf("op %d: shows %q, published %v; want %q, %v", i, shown, reg.Snapshot().Version != v, o.wantShown, o.wantPub)
				}
				if rev.Generation != gen {
					t.Fatalf("op %d: Generation %d -> %d: a wake failure is not for Envoy", i, gen, rev.Generation)
				}
			}
		})
	}

	t.Run("a basis from an earlier revision of the key", func(t *testing.T) {
		reg := NewRegistry(RegistryOptions{})
		spec := DefaultSpec()
		spec.Hosts = []string{"demo.example.com"}
		reg.Upsert(key, spec)
		old := reg.Snapshot().Get(key)
		reg.Delete(key)
		if reg.SetActivationFailure(old, timeout) {
			t.Fatal("recorded for a deleted revision")
		}
		reg.Upsert(key, spec)
		if reg.SetActivationFailure(old, timeout) || reg.Snapshot().Get(key).WakeFailure != nil {
			t.Fatal("a failure of the deleted revision was given to the new one")
		}
	})
}
