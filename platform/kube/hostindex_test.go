package kube

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/thaw-dev/thaw/revision"
)

func TestHostIndex(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	x := newHostIndex()
	a, b, c := key("a"), key("b"), key("c")
	owns := func(k revision.Key) bool { return x.conflicts(k) == nil }

	if got := x.set(b, t0, []string{"dup.localhost", "b.localhost"}, false); got != nil {
		t.Errorf("first claim affected %v", got)
	}
	// c is newer: b keeps the host.
	if got := x.set(c, t0.Add(time.Second), []string{"dup.localhost"}, false); !slices.Equal(got, []revision.Key{b}) {
		t.Errorf("c's claim affected %v, want [b]", got)
	}
	if !owns(b) || owns(c) {
		t.Fatalf("b owns %v, c owns %v; want b only", owns(b), owns(c))
	}
	var fe *revision.FieldError
	if err := x.conflicts(c); !errors.As(err, &fe) || fe.Field != AnnotationHosts || fe.Value != "dup.localhost" ||
		!strings.Contains(fe.Allowed, "apps/b") {
		t.Errorf("conflicts(c) = %v", err)
	}
	// a has the same creation time as b and a lower key: it wins.
	x.set(a, t0, []string{"dup.localhost"}, false)
	if !owns(a) || owns(b) || owns(c) {
		t.Errorf("after a: owns a=%v b=%v c=%v, want a only", owns(a), owns(b), owns(c))
	}
	// Re-setting an unchanged claim affects nobody (no reconcile loop).
	if got := x.set(b, t0, []string{"b.localhost", "dup.localhost"}, false); got != nil {
		t.Errorf("unchanged claim affected %v", got)
	}
	// a lets go: b, then c, are told.
	if got := x.remove(a); !slices.Equal(got, []revision.Key{b, c}) {
		t.Errorf("remove(a) affected %v, want [b c]", got)
	}
	if !owns(b) || owns(c) {
		t.Errorf("after remove(a): b owns %v, c owns %v", owns(b), owns(c))
	}
	x.set(b, t0, []string{"b.localhost"}, false)
	if !owns(c) {
		t.Errorf("c does not own dup.localhost after b dropped it")
	}
	x.remove(b)
	x.remove(c)
	if len(x.claims) != 0 || len(x.byKey) != 0 {
		t.Errorf("index not empty: %v %v", x.claims, x.byKey)
	}
}

// TestHostClaimedTwiceIsInvalid: hosts that differ only in case, trailing
// dot or port are one host; the workload created later is invalid with an
// Event naming the owner, and becomes valid once the owner is gone.
func TestHostClaimedTwiceIsInvalid(t *testing.T) {
	older := deployment("old", 1, hosts("dup.localhost"))
	older.CreationTimestamp = metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	newer := deployment("new", 1, hosts("other.localhost, DUP.localhost.:8080"))
	newer.CreationTimestamp = metav1.NewTime(older.CreationTimestamp.Add(time.Minute))
	env := newEnv(t, nil, newer, older, deployment("free", 1, hosts("free.localhost")))

	snap := env.waitFor(t, "sync", func(s *revision.Snapshot) bool { return s.Synced })
	if snap.Get(key("old")) == nil || snap.Get(key("free")) == nil || snap.Invalid[key("new")] == nil {
		t.Fatalf("first synced snapshot: revisions %v invalid %v; want old and free valid, new invalid",
			keys(snap.Revisions), snap.Invalid)
	}
	if got := snap.Get(key("old")).Spec.Hosts; !slices.Equal(got, []string{"dup.localhost"}) {
		t.Errorf("old hosts = %q", got)
	}
	ev := env.event(t)
	for _, want := range []string{"Warning", ReasonInvalidConfiguration, AnnotationHosts, `"dup.localhost"`, "apps/old"} {
		if !strings.Contains(ev, want) {
			t.Errorf("event %q does not contain %q", ev, want)
		}
	}
	if err := snap.Invalid[key("new")]; !errors.Is(err, revision.ErrInvalidSpec) {
		t.Errorf("invalid error %v does not wrap ErrInvalidSpec", err)
	}

	if err := env.client.AppsV1().Deployments(testNS).Delete(env.ctx, "old", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	snap = env.waitFor(t, "new takes the host", func(s *revision.Snapshot) bool {
		return s.Get(key("new")) != nil && s.Get(key("old")) == nil
	})
	if got := snap.Get(key("new")).Spec.Hosts; !slices.Equal(got, []string{"other.localhost", "dup.localhost"}) {
		t.Errorf("new hosts = %q", got)
	}
	if len(snap.Invalid) != 0 {
		t.Errorf("invalid = %v", snap.Invalid)
	}
}

// TestHostIndexSplit: revisions with a traffic percent share a host (the
// xds translation checks the split); two without one still conflict.
func TestHostIndexSplit(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	x := newHostIndex()
	v1, v2, other := key("v1"), key("v2"), key("other")
	x.set(v1, t0, []string{"shop.example.com"}, true)
	x.set(v2, t0.Add(time.Second), []string{"shop.example.com"}, true)
	if err := x.conflicts(v1); err != nil {
		t.Errorf("v1 (90%%): %v", err)
	}
	if err := x.conflicts(v2); err != nil {
		t.Errorf("v2 (10%%): %v", err)
	}
	// Without a percent, the first created without one owns the host.
	x.set(other, t0.Add(2*time.Second), []string{"shop.example.com"}, false)
	if err := x.conflicts(other); err != nil {
		t.Errorf("the only revision without a percent on the host: %v", err)
	}
	late := key("late")
	x.set(late, t0.Add(3*time.Second), []string{"shop.example.com"}, false)
	if err := x.conflicts(late); err == nil || !strings.Contains(err.Error(), "apps/other") {
		t.Errorf("second revision without a percent: %v, want a conflict with apps/other", err)
	}
	// v2 loses its percent: it now conflicts with other, created first.
	x.set(v2, t0.Add(time.Second), []string{"shop.example.com"}, false)
	if err := x.conflicts(v2); err != nil {
		t.Errorf("v2 without a percent, created before other: %v", err)
	}
	if err := x.conflicts(other); err == nil {
		t.Error("other: no conflict with v2 (now without a percent, created first)")
	}
}
