package kube

import (
	"context"
	"encoding/json"
	"errors"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/thaw-dev/thaw/autoscaler"
	"github.com/thaw-dev/thaw/revision"
)

func TestRunPublishesRevisionsAndBackends(t *testing.T) {
	env := newEnv(t, nil,
		deployment("hello", 2, hosts("hello.example.com")),
		deployment("plain", 1, nil),
		pod("hello-1", "hello", "127.8.0.1", true),
		pod("hello-2", "hello", "127.8.0.2", false),
		pod("plain-1", "plain", "127.8.0.3", true),
	)
	snap := env.waitFor(t, "initial sync", func(s *revision.Snapshot) bool { return s.Synced })
	if got := keys(snap.Revisions); len(got) != 1 || got[0] != "apps/hello" {
		t.Fatalf("revisions at sync = %v, want only apps/hello (synced snapshots must be complete)", got)
	}
	rev := snap.Get(key("hello"))
	if len(rev.Backends) != 1 || rev.Backends[0].HostPort() != "127.8.0.1:8080" || rev.Spec.Hosts[0] != "hello.example.com" {
		t.Fatalf("hello = %+v", rev)
	}

	ctx := env.ctx
	pods := env.client.CoreV1().Pods(testNS)
	p2 := pod("hello-2", "hello", "127.8.0.2", true)
	if _, err := pods.UpdateStatus(ctx, p2, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	env.waitFor(t, "second backend", func(s *revision.Snapshot) bool {
		return len(s.Get(key("hello")).Backends) == 2
	})
	if _, ready, _ := env.p.GetScale(ctx, key("hello")); ready != 2 {
		t.Errorf("GetScale ready = %d, want 2", ready)
	}

	// A relabelled pod leaves the set.
	p1 := pod("hello-1", "hello", "127.8.0.1", true)
	p1.Labels = map[string]string{"app": "other"}
	if _, err := pods.Update(ctx, p1, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	env.waitFor(t, "relabelled pod gone", func(s *revision.Snapshot) bool {
		b := s.Get(key("hello")).Backends
		return len(b) == 1 && b[0].Address == "127.8.0.2"
	})

	// Annotating a workload makes it a revision; removing the annotation
	// or deleting the workload removes it.
	plain := deployment("plain", 1, hosts("plain"))
	if _, err := env.client.AppsV1().Deployments(testNS).Update(ctx, plain, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	env.waitFor(t, "plain annotated", func(s *revision.Snapshot) bool {
		r := s.Get(key("plain"))
		return r != nil && len(r.Backends) == 1
	})
	if _, err := env.client.AppsV1().Deployments(testNS).Update(ctx, deployment("plain", 1, nil), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	env.waitFor(t, "plain unannotated", func(s *revision.Snapshot) bool { return s.Get(key("plain")) == nil })
	if err := env.client.AppsV1().Deployments(testNS).Delete(ctx, "hello", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	env.waitFor(t, "hello deleted", func(s *revision.Snapshot) bool { return s.Revisions.Len() == 0 })
	if _, _, err := env.p.GetScale(ctx, key("hello")); !errors.Is(err, autoscaler.ErrNotFound) {
		t.Errorf("GetScale after delete: %v, want ErrNotFound", err)
	}
}

func TestInvalidAnnotationsAreReportedAndIsolated(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	bad := revision.ThawPrefix + revision.KeyTargetUtilization
	env := newEnv(t, func(o *Options) { o.Registerer = reg },
		deployment("good", 1, hosts("good")),
		deployment("bad", 1, hosts("bad", bad, "150")),
		pod("good-1", "good", "127.8.0.1", true),
	)
	snap := env.waitFor(t, "sync", func(s *revision.Snapshot) bool { return s.Synced })
	if snap.Get(key("good")) == nil || snap.Invalid[key("bad")] == nil || snap.Get(key("bad")) != nil {
		t.Fatalf("revisions %v invalid %v", keys(snap.Revisions), snap.Invalid)
	}
	ev := env.event(t)
	for _, want := range []string{"Warning", ReasonInvalidConfiguration, bad, "150", "1..100"} {
		if !strings.Contains(ev, want) {
			t.Errorf("event %q does not contain %q", ev, want)
		}
	}
	if got := testutil.ToFloat64(env.p.metrics.configErrors.WithLabelValues(bad)); got != 1 {
		t.Errorf("%s{field=%s} = %v, want 1", MetricConfigErrors, bad, got)
	}
	if got := testutil.ToFloat64(env.p.metrics.revisions.WithLabelValues("invalid")); got != 1 {
		t.Errorf("invalid revisions gauge = %v, want 1", got)
	}

	// Fixing it makes it valid; nothing else is reported.
	fixed := deployment("bad", 1, hosts("bad", bad, "80"))
	if _, err := env.client.AppsV1().Deployments(testNS).Update(env.ctx, fixed, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	env.waitFor(t, "fixed", func(s *revision.Snapshot) bool { return s.Get(key("bad")) != nil && len(s.Invalid) == 0 })
	env.noEvent(t)
	if got := testutil.ToFloat64(env.p.metrics.revisions.WithLabelValues("valid")); got != 2 {
		t.Errorf("valid revisions gauge = %v, want 2", got)
	}
}

func TestScale(t *testing.T) {
	env := newEnv(t, nil,
		deployment("hello", 2, hosts("hello")),
		pod("hello-1", "hello", "127.8.0.1", true),
	)
	env.waitFor(t, "sync", func(s *revision.Snapshot) bool { return s.Synced })
	ctx := env.ctx
	cur, ready, err := env.p.GetScale(ctx, key("hello"))
	if err != nil || cur != 2 || ready != 1 {
		t.Fatalf("GetScale = %d, %d, %v; want 2, 1", cur, ready, err)
	}
	if err := env.p.SetScale(ctx, key("hello"), 5); err != nil {
		t.Fatalf("SetScale: %v", err)
	}
	if len(env.patches) != 1 || env.patches[0] != 5 {
		t.Errorf("patches %v, want [5]", env.patches)
	}
	if cur, _, _ := env.p.GetScale(ctx, key("hello")); cur != 5 {
		t.Errorf("GetScale after SetScale = %d, want 5 before the cache catches up", cur)
	}
	if ev := env.event(t); !strings.Contains(ev, ReasonScaled) || !strings.Contains(ev, "from 2 to 5") {
		t.Errorf("event %q, want Scaled from 2 to 5", ev)
	}
	if err := env.p.SetScale(ctx, key("nope"), 1); !errors.Is(err, autoscaler.ErrNotFound) {
		t.Errorf("SetScale unknown: %v, want ErrNotFound", err)
	}
	if err := env.p.SetScale(ctx, key("hello"), -1); err == nil {
		t.Error("SetScale -1 accepted")
	}
}

func TestFollowerDoesNotWrite(t *testing.T) {
	env := newEnv(t, func(o *Options) { o.Elected = true },
		deployment("hello", 0, hosts("hello")),
		deployment("bad", 0, hosts("bad", AnnotationPort, "x")),
	)
	env.waitFor(t, "sync", func(s *revision.Snapshot) bool { return s.Synced })
	if err := env.p.SetScale(env.ctx, key("hello"), 1); !errors.Is(err, ErrNotLeader) {
		t.Errorf("follower SetScale: %v, want ErrNotLeader", err)
	}
	env.noEvent(t)
	env.p.SetLeader(true)
	// The new leader reports the configuration error it inherited.
	if ev := env.event(t); !strings.Contains(ev, ReasonInvalidConfiguration) || !strings.Contains(ev, AnnotationPort) {
		t.Errorf("event %q, want InvalidConfiguration naming %s", ev, AnnotationPort)
	}
	if err := env.p.SetScale(env.ctx, key("hello"), 1); err != nil {
		t.Errorf("leader SetScale: %v", err)
	}
	env.p.SetLeader(false)
	if err := env.p.SetScale(env.ctx, key("hello"), 2); !errors.Is(err, ErrNotLeader) {
		t.Errorf("SetScale after losing leadership: %v, want ErrNotLeader", err)
	}
}

func TestKeyConflict(t *testing.T) {
	env := newEnv(t, nil,
		deployment("x", 1, hosts("x-deploy")),
		statefulSet("x", 1, hosts("x-sts")),
	)
	snap := env.waitFor(t, "sync", func(s *revision.Snapshot) bool { return s.Synced })
	if r := snap.Get(key("x")); r == nil || r.Spec.Hosts[0] != "x-deploy" {
		t.Fatalf("x = %+v, want the Deployment's revision", r)
	}
	if ev := env.event(t); !strings.Contains(ev, ReasonKeyConflict) || !strings.Contains(ev, "StatefulSet is ignored") {
		t.Errorf("event %q, want KeyConflict on the StatefulSet", ev)
	}
	// Without the Deployment, the StatefulSet owns the key.
	if err := env.client.AppsV1().Deployments(testNS).Delete(env.ctx, "x", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	env.waitFor(t, "statefulset takes over", func(s *revision.Snapshot) bool {
		r := s.Get(key("x"))
		return r != nil && r.Spec.Hosts[0] == "x-sts"
	})
	if err := env.p.SetScale(env.ctx, key("x"), 3); err != nil {
		t.Fatal(err)
	}
	if a := env.scales.Actions(); len(a) != 1 || a[0].GetResource().Resource != "statefulsets" {
		t.Errorf("scale actions %v, want one on statefulsets", a)
	}
}

func TestLabelSelectorScopesWorkloads(t *testing.T) {
	in := deployment("in", 1, hosts("in"))
	in.Labels = map[string]string{"thaw": "on"}
	env := newEnv(t, func(o *Options) { o.LabelSelector = "thaw=on" },
		in, deployment("out", 1, hosts("out")))
	snap := env.waitFor(t, "sync", func(s *revision.Snapshot) bool { return s.Synced })
	if got := keys(snap.Revisions); len(got) != 1 || got[0] != "apps/in" {
		t.Errorf("revisions %v, want only apps/in", got)
	}
}

func TestStatusAnnotationAndModeEvents(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	env := newEnv(t, func(o *Options) { o.Clock = clk; o.StatusInterval = time.Second },
		deployment("hello", 1, hosts("hello")),
		pod("hello-1", "hello", "127.8.0.1", true),
	)
	env.waitFor(t, "sync", func(s *revision.Snapshot) bool { return s.Synced })
	env.reg.SetDesiredScale(key("hello"), 1)
	env.reg.SetMode(key("hello"), revision.ModeServe)
	if ev := env.event(t); !strings.Contains(ev, ReasonServeMode) || !strings.Contains(ev, "1 ready") {
		t.Errorf("event %q, want ServeMode with 1 ready pod", ev)
	}
	want := Status{Mode: "serve", Desired: 1, Ready: 1}
	got := waitStatus(t, env, clk, "hello", func(s Status) bool { return s == want })
	if got != want {
		t.Errorf("status %+v, want %+v", got, want)
	}
}

// waitStatus steps the clock until the workload's status annotation
// satisfies ok (at most 300 steps: a deadlock guard).
func waitStatus(t *testing.T, env *testEnv, clk *clocktesting.FakeClock, name string, ok func(Status) bool) Status {
	t.Helper()
	var last Status
	for range 300 {
		clk.Step(time.Second)
		d, err := env.client.AppsV1().Deployments(testNS).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if v, found := d.Annotations[AnnotationStatus]; found {
			if err := json.Unmarshal([]byte(v), &last); err != nil {
				t.Fatalf("status %q: %v", v, err)
			}
			if ok(last) {
				return last
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("status annotation never matched; last %+v", last)
	return last
}

// TestOtherAutoscalerLeavesWorkloadAlone: a HorizontalPodAutoscaler on an
// annotated workload makes its revision invalid with the HPA named (Event),
// SetScale writes nothing, and removing the HPA makes it valid again.
func TestOtherAutoscalerLeavesWorkloadAlone(t *testing.T) {
	hpa := &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: "hello-hpa"},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{MaxReplicas: 5,
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "hello"}},
	}
	env := newEnv(t, func(o *Options) { o.Elected = false },
		deployment("hello", 1, hosts("hello")), deployment("other", 1, hosts("other")), hpa)
	snap := env.waitFor(t, "sync", func(s *revision.Snapshot) bool { return s.Synced })
	if snap.Invalid[key("hello")] == nil || snap.Get(key("other")) == nil {
		t.Fatalf("revisions %v invalid %v; want hello invalid, other valid", keys(snap.Revisions), snap.Invalid)
	}
	if err := snap.Invalid[key("hello")]; !errors.Is(err, ErrOtherAutoscaler) || !strings.Contains(err.Error(), "hello-hpa") {
		t.Errorf("invalid reason %v, want ErrOtherAutoscaler naming hello-hpa", err)
	}
	if ev := env.event(t); !strings.Contains(ev, "hello-hpa") {
		t.Errorf("event %q does not name the HPA", ev)
	}
	if err := env.p.SetScale(env.ctx, key("hello"), 3); !errors.Is(err, ErrOtherAutoscaler) {
		t.Errorf("SetScale with an HPA: %v, want ErrOtherAutoscaler", err)
	}
	env.mu.Lock()
	n := len(env.patches)
	env.mu.Unlock()
	if n != 0 {
		t.Errorf("%d /scale patches, want none", n)
	}
	if err := env.client.AutoscalingV2().HorizontalPodAutoscalers(testNS).Delete(env.ctx, "hello-hpa", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	env.waitFor(t, "valid once the HPA is gone", func(s *revision.Snapshot) bool { return s.Get(key("hello")) != nil })
}
