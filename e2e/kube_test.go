//go:build e2e

package e2e

import (
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"github.com/thaw-dev/thaw/autoscaler"
	"github.com/thaw-dev/thaw/platform/kube"
	"github.com/thaw-dev/thaw/revision"
)

// TestKubePlatform runs platform/kube against the real control plane
// (etcd, kube-apiserver, controller manager, scheduler, kwok, pod runner)
// as thaw's ServiceAccount with the RBAC of manifests/: revisions from
// annotated workloads, backends following pod readiness, /scale patches,
// Events, the status annotation, invalid configurations and deletions.
func TestKubePlatform(t *testing.T) {
	env := startKubeEnv(t, 200*time.Millisecond)
	c := env.Cluster

	t.Run("manifests dry-run", func(t *testing.T) {
		// `kubectl apply --dry-run=server -k manifests/`: every object
		// passes the apiserver's validation and admission (including
		// PodSecurity "restricted" on thaw-system) without being stored.
		if err := applyObjects(t.Context(), c.Config, env.Manifests, true); err != nil {
			t.Fatalf("dry-run apply of manifests/: %v", err)
		}
		t.Logf("%d objects of manifests/ accepted by a server-side dry-run", len(env.Manifests))
	})

	const ns = "apps"
	createNamespace(t, c, ns)
	kp := startKubePlatform(t, env, nil)
	deployments := c.Client.AppsV1().Deployments(ns)
	hello := revision.Key{Namespace: ns, Name: "hello"}

	t.Run("revision and backends from an annotated Deployment", func(t *testing.T) {
		if _, err := deployments.Create(t.Context(), revisionDeployment(ns, "hello", 1, nil), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := deployments.Create(t.Context(), smokeDeployment(ns, "plain", 8080, 0), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		s := kp.wait(t, "hello with one ready backend", func(s *revision.Snapshot) bool { return len(readyBackends(s, hello)) == 1 })
		pods := waitPods(t, c, ns, "hello", func(p []corev1.Pod) bool { return len(podIPs(p)) == 1 })
		if got, want := backendIPs(readyBackends(s, hello)), podIPs(pods); !maps.Equal(got, want) {
			t.Errorf("backends %v, want the Ready pod IPs %v", got, want)
		}
		if r := s.Get(hello); r.Spec.Hosts[0] != "hello.example.com" || r.Backends[0].Port != 8080 {
			t.Errorf("hello = %+v", r)
		}
		if s.Get(revision.Key{Namespace: ns, Name: "plain"}) != nil {
			t.Error("unannotated Deployment became a revision")
		}
	})

	t.Run("SetScale patches /scale and backends follow pods", func(t *testing.T) {
		start := time.Now()
		if err := kp.P.SetScale(t.Context(), hello, 3); err != nil {
			t.Fatalf("SetScale 3: %v", err)
		}
		if cur, _, err := kp.P.GetScale(t.Context(), hello); err != nil || cur != 3 {
			t.Errorf("GetScale after SetScale = %d, %v; want 3", cur, err)
		}
		s := kp.wait(t, "3 ready backends", func(s *revision.Snapshot) bool { return len(readyBackends(s, hello)) == 3 })
		t.Logf("scale 1 -> 3: 3 ready backends after %v", time.Since(start).Round(time.Millisecond))
		pods := waitPods(t, c, ns, "hello", func(p []corev1.Pod) bool { return len(podIPs(p)) == 3 })
		if got, want := backendIPs(readyBackends(s, hello)), podIPs(pods); !maps.Equal(got, want) {
			t.Errorf("backends %v, want %v", got, want)
		}
		waitEvent(t, c.Client, ns, "hello", kube.ReasonScaled, "from 1 to 3")

		// A terminating pod leaves the backends before it is gone.
		victim := pods[0]
		if err := c.Client.CoreV1().Pods(ns).Delete(t.Context(), victim.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		kp.wait(t, "deleted pod's backend removed", func(s *revision.Snapshot) bool {
			return !backendIPs(readyBackends(s, hello))[victim.Status.PodIP]
		})

		start = time.Now()
		if err := kp.P.SetScale(t.Context(), hello, 0); err != nil {
			t.Fatalf("SetScale 0: %v", err)
		}
		kp.wait(t, "no backends", func(s *revision.Snapshot) bool { return s.Get(hello) != nil && len(readyBackends(s, hello)) == 0 })
		t.Logf("scale 3 -> 0: no backends after %v", time.Since(start).Round(time.Millisecond))
		waitPods(t, c, ns, "hello", func(p []corev1.Pod) bool { return len(p) == 0 })
		d, err := deployments.Get(t.Context(), "hello", metav1.GetOptions{})
		if err != nil || *d.Spec.Replicas != 0 {
			t.Errorf("hello spec.replicas = %v (%v), want 0", d.Spec.Replicas, err)
		}
	})

	t.Run("status annotation and mode events", func(t *testing.T) {
		kp.Reg.SetDesiredScale(hello, 0)
		kp.Reg.SetMode(hello, revision.ModeServe)
		waitEvent(t, c.Client, ns, "hello", kube.ReasonServeMode)
		want := kube.Status{Mode: "serve", Desired: 0, Ready: 0}
		var got kube.Status
		err := pollFor(t, func() bool {
			d, err := deployments.Get(t.Context(), "hello", metav1.GetOptions{})
			if err != nil {
				return false
			}
			return json.Unmarshal([]byte(d.Annotations[kube.AnnotationStatus]), &got) == nil && got == want
		})
		if err != nil {
			t.Errorf("status annotation %+v, want %+v", got, want)
		}
		kp.Reg.SetMode(hello, revision.ModeProxy)
		waitEvent(t, c.Client, ns, "hello", kube.ReasonProxyMode)
	})

	t.Run("StatefulSet revision", func(t *testing.T) {
		key := revision.Key{Namespace: ns, Name: "db"}
		if _, err := c.Client.AppsV1().StatefulSets(ns).Create(t.Context(), revisionStatefulSet(ns, "db", 0, nil), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		kp.wait(t, "db revision", func(s *revision.Snapshot) bool { return s.Get(key) != nil })
		if err := kp.P.SetScale(t.Context(), key, 2); err != nil {
			t.Fatalf("SetScale: %v", err)
		}
		kp.wait(t, "db with 2 backends", func(s *revision.Snapshot) bool { return len(readyBackends(s, key)) == 2 })
	})

	t.Run("invalid annotations: Event naming the field, others keep working", func(t *testing.T) {
		bad := revision.Key{Namespace: ns, Name: "bad"}
		field := revision.ThawPrefix + revision.KeyTargetUtilization
		if _, err := deployments.Create(t.Context(), revisionDeployment(ns, "bad", 0, map[string]string{field: "150"}), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		kp.wait(t, "bad invalid", func(s *revision.Snapshot) bool { return s.Invalid[bad] != nil })
		ev := waitEvent(t, c.Client, ns, "bad", kube.ReasonInvalidConfiguration, field, `"150"`, "1..100")
		if ev.Type != corev1.EventTypeWarning || ev.Source.Component != kube.EventComponent {
			t.Errorf("event type %s source %s, want Warning from %s", ev.Type, ev.Source.Component, kube.EventComponent)
		}
		// The other revisions are untouched and still scale.
		if err := kp.P.SetScale(t.Context(), hello, 1); err != nil {
			t.Fatalf("SetScale hello: %v", err)
		}
		s := kp.wait(t, "hello back to 1 backend", func(s *revision.Snapshot) bool { return len(readyBackends(s, hello)) == 1 })
		if s.Get(bad) != nil {
			t.Error("invalid revision is routed")
		}
		// Fixing the annotation makes it a revision.
		// The deployment controller writes the same object: retry on
		// conflict with a fresh read.
		err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
			d, err := deployments.Get(t.Context(), "bad", metav1.GetOptions{})
			if err != nil {
				return err
			}
			d.Annotations[field] = "80"
			_, err = deployments.Update(t.Context(), d, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		kp.wait(t, "bad fixed", func(s *revision.Snapshot) bool { return s.Get(bad) != nil && s.Invalid[bad] == nil })
	})

	t.Run("deleting a workload removes its revision", func(t *testing.T) {
		if err := deployments.Delete(t.Context(), "hello", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		kp.wait(t, "hello gone", func(s *revision.Snapshot) bool { return s.Get(hello) == nil })
		if _, _, err := kp.P.GetScale(t.Context(), hello); !errors.Is(err, autoscaler.ErrNotFound) {
			t.Errorf("GetScale of a deleted workload: %v, want ErrNotFound", err)
		}
		if err := kp.P.SetScale(t.Context(), hello, 1); !errors.Is(err, autoscaler.ErrNotFound) {
			t.Errorf("SetScale of a deleted workload: %v, want ErrNotFound", err)
		}
		keys := slices.Collect(kp.Reg.Snapshot().Revisions.Keys())
		if len(keys) != 2 {
			t.Errorf("revisions %v, want db and bad", keys)
		}
	})
}

// pollFor polls cond every 100 ms for at most 60 s (a deadlock guard).
func pollFor(t *testing.T, cond func() bool) error {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if cond() {
			return nil
		}
		select {
		case <-t.Context().Done():
			return t.Context().Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return errors.New("condition not met within 60s")
}
