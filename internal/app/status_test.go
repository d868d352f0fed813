package app

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/thaw-dev/thaw/activator"
	"github.com/thaw-dev/thaw/revision"
	"github.com/thaw-dev/thaw/xds/translate"
)

// erroringPlatform is a platform stand-in that reports a failure for one
// revision, as platform/local does for a crash-looping process.
type erroringPlatform struct{ bad revision.Key }

func (erroringPlatform) GetScale(context.Context, revision.Key) (int32, int32, error) {
	return 1, 0, nil
}
func (erroringPlatform) SetScale(context.Context, revision.Key, int32) error { return nil }
func (erroringPlatform) Run(ctx context.Context) error                       { <-ctx.Done(); return nil }
func (p erroringPlatform) RevisionError(key revision.Key) string {
	if key == p.bad {
		return "crashy-1: exit status 3"
	}
	return ""
}

// TestStatusShowsPlatformErrors: a valid revision's row carries the
// platform's last error, or else its wake failure (an activation timeout);
// other rows stay clean; an invalid revision's row carries its
// configuration error.
func TestStatusShowsPlatformErrors(t *testing.T) {
	reg := revision.NewRegistry(revision.RegistryOptions{})
	crashy, fine, broken := revision.Key{Namespace: "local", Name: "crashy"}, revision.Key{Namespace: "local", Name: "fine"},
		revision.Key{Namespace: "local", Name: "broken"}
	slow := revision.Key{Namespace: "local", Name: "slow"}
	for i, k := range []revision.Key{crashy, fine, slow} {
		s := revision.DefaultSpec()
		s.Hosts = []string{[]string{"crashy.localhost", "fine.localhost", "slow.localhost"}[i]}
		reg.Upsert(k, s)
	}
	reg.SetActivationFailure(reg.Snapshot().Get(slow), &revision.WakeFailure{Reason: revision.WakeActivationTimeout, Message: "no backend"})
	reg.SetInvalid(broken, &revision.FieldError{Field: "hosts", Value: "x", Allowed: "y"})
	a, err := New(Options{Registry: reg, GRPCAddress: "127.0.0.1:0", AdminAddress: "127.0.0.1:0",
		XDS: translate.DefaultConfig(),
		NewPlatform: func(*activator.Activator, prometheus.Registerer) (Platform, error) {
			return erroringPlatform{bad: crashy}, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.grpcLn.Close(); a.admin.ln.Close() })
	got := map[string]string{}
	for _, r := range a.Status() {
		got[r.Revision] = r.Error
	}
	if got["local/crashy"] != "crashy-1: exit status 3" || got["local/fine"] != "" || got["local/broken"] == "" ||
		got["local/slow"] != "wake-up failed: ActivationTimeout: no backend" || len(got) != 4 {
		t.Errorf("status errors = %q", got)
	}
	// StatusOf answers each row alone, the same as Status, and nothing
	// for a key thaw does not know.
	for _, want := range a.Status() {
		key, err := revision.ParseKey(want.Revision)
		if err != nil {
			t.Fatal(err)
		}
		if row, ok := a.StatusOf(key); !ok || row != want {
			t.Errorf("StatusOf(%s) = %+v, %v; want %+v", key, row, ok, want)
		}
	}
	if row, ok := a.StatusOf(revision.Key{Namespace: "local", Name: "nope"}); ok {
		t.Errorf("StatusOf(local/nope) = %+v, want not found", row)
	}
}
