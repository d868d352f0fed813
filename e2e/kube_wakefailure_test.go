//go:build e2e

package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	"github.com/thaw-dev/thaw/api/v1alpha1"
	"github.com/thaw-dev/thaw/e2e/harness"
	"github.com/thaw-dev/thaw/platform/kube"
	"github.com/thaw-dev/thaw/revision"
)

// TestKubeImagePullBackOffFailsFast: `thaw run` with a real Envoy and the
// Revision CRD; a request wakes a Revision whose pod then waits in
// ImagePullBackOff (set on the pod's status as a kubelet would; kwok runs
// no containers and the pod runner serves another namespace, so the pod
// never becomes Ready). The held request is answered 503 with Retry-After
// and the reason within the client's deadline (10 s, against a 60 s hold
// timeout); the Revision's Active condition carries the reason and a
// WakeFailed Event is recorded. thaw runs with --max-held 1: while the
// first request is held, a second one is refused at once (503,
// Retry-After, outcome held_limit), which proves thaw run's held-request
// bound at no extra cost.
func TestKubeImagePullBackOffFailsFast(t *testing.T) {
	env := startKubeEnvWith(t, harness.PodRunnerOptions{Namespace: "served-elsewhere"})
	c := env.Cluster
	installRevisionCRD(t, env)
	run, proxy, th := startThawRunEnvoy(t, thawKubeconfig(t, c), thawRunEnvoyOptions{Extra: []string{"--max-held", "1"}})

	const ns, name, host = "pull", "pull-rev", "pull.example.com"
	createNamespace(t, c, ns)
	if _, err := c.Client.AppsV1().Deployments(ns).Create(t.Context(), smokeDeployment(ns, "pull", 8080, 0), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	revs := dyn.Resource(v1alpha1.RevisionsResource).Namespace(ns)
	createRevision(t, revs, ns, name, map[string]any{
		"scaleTargetRef": deployRef("pull"), "port": 8080, "hosts": []any{host},
		"autoscaling": map[string]any{"holdTimeout": "60s"},
	})
	key := revision.Key{Namespace: ns, Name: name}
	waitStatus(t, th, key.String(), 30*time.Second, "the revision in proxy mode at zero", func(r map[string]any) bool {
		return r["mode"] == "proxy" && num(r, "ready") == 0
	})
	waitEnvoyRoutes(t, proxy, key)

	type answer struct {
		code       int
		body       string
		retryAfter string
		reason     string
		err        error
	}
	done := make(chan answer, 1)
	go func() {
		ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
		defer cancel()
		code, body, hdr, err := get(ctx, client(60*time.Second), th, host, "/")
		a := answer{code: code, body: body, err: err}
		if hdr != nil {
			a.retryAfter, a.reason = hdr.Get("Retry-After"), hdr.Get("X-Thaw-Wake-Failure")
		}
		done <- a
	}()

	// The request wakes the revision: a pod appears and runs, never Ready.
	pods := waitPods(t, c, ns, "pull", func(ps []corev1.Pod) bool {
		return len(ps) == 1 && ps[0].Status.Phase == corev1.PodRunning && ps[0].Status.PodIP != ""
	})
	select {
	case a := <-done:
		t.Fatalf("request answered before the pod failed: %+v", a)
	default:
	}
	// The bound: one request is held, so a second one is refused at once.
	ctx, cancel := context.WithTimeout(t.Context(), exitDeadline)
	code, body, hdr, err := get(ctx, client(exitDeadline), th, host, "/")
	cancel()
	if err != nil || code != 503 || hdr.Get("Retry-After") == "" || !strings.Contains(body, "too many requests waiting") {
		t.Fatalf("second request with --max-held 1: %d %q (Retry-After %q), err %v; want 503 held_limit at once", code, body, hdr.Get("Retry-After"), err)
	}
	if m := metricsText(t, th); !strings.Contains(m, `thaw_extproc_responses_total{outcome="held_limit"} 1`+"\n") {
		t.Fatalf("thaw_extproc_responses_total{outcome=\"held_limit\"} is not 1 in /metrics")
	}
	select {
	case a := <-done:
		t.Fatalf("the held request was answered by the refusal of another: %+v", a)
	default:
	}
	p := pods[0]
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", Image: "registry.invalid/web:1",
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff",
			Message: `Back-off pulling image "registry.invalid/web:1"`}}}}
	if _, err := c.Client.CoreV1().Pods(ns).UpdateStatus(t.Context(), &p, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("set ImagePullBackOff: %v", err)
	}
	failedAt := time.Now()
	select {
	case a := <-done:
		t.Logf("answered %d %v after the pod failed: %q", a.code, time.Since(failedAt), a.body)
		if a.err != nil || a.code != 503 || a.retryAfter == "" || a.reason != "ImagePullBackOff" ||
			!strings.Contains(a.body, ns+"/"+name) || !strings.Contains(a.body, "Back-off pulling image") {
			t.Fatalf("answer %+v, want 503 with Retry-After, x-thaw-wake-failure ImagePullBackOff and a body naming the revision and the kubelet's message", a)
		}
	case <-time.After(exitDeadline):
		t.Fatalf("held request not answered within %s of ImagePullBackOff\n%s", exitDeadline, run.proc.LogTail(30))
	}

	waitRevisionStatus(t, revs, name, "Active False with reason ImagePullBackOff", func(st v1alpha1.RevisionStatus) bool {
		return hasCondition(st, v1alpha1.ConditionActive, metav1.ConditionFalse, "ImagePullBackOff")
	})
	waitEvent(t, c.Client, ns, name, kube.ReasonWakeFailed, "ImagePullBackOff")
}

// TestKubeActivationTimeoutFailsFast: `thaw run` with a real Envoy; a
// request wakes a Revision whose pod runs but never becomes Ready (the pod
// runner serves another namespace) and reports no failure of its own.
// With activationTimeout 2s the held request is answered 503 with
// Retry-After and x-thaw-wake-failure: ActivationTimeout well before its
// 60 s hold timeout (the client's 30 s deadline covers the wake-up, the
// timeout and one decision tick), by the leader's activator.
func TestKubeActivationTimeoutFailsFast(t *testing.T) {
	env := startKubeEnvWith(t, harness.PodRunnerOptions{Namespace: "served-elsewhere"})
	c := env.Cluster
	installRevisionCRD(t, env)
	run, proxy, th := startThawRunEnvoy(t, thawKubeconfig(t, c), thawRunEnvoyOptions{})

	const ns, name, host = "slow", "slow-rev", "slow.example.com"
	createNamespace(t, c, ns)
	if _, err := c.Client.AppsV1().Deployments(ns).Create(t.Context(), smokeDeployment(ns, "slow", 8080, 0), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	createRevision(t, dyn.Resource(v1alpha1.RevisionsResource).Namespace(ns), ns, name, map[string]any{
		"scaleTargetRef": deployRef("slow"), "port": 8080, "hosts": []any{host},
		"autoscaling": map[string]any{"holdTimeout": "60s", "activationTimeout": "2s"},
	})
	key := revision.Key{Namespace: ns, Name: name}
	waitStatus(t, th, key.String(), 30*time.Second, "the revision in proxy mode at zero", func(r map[string]any) bool {
		return r["mode"] == "proxy" && num(r, "ready") == 0
	})
	waitEnvoyRoutes(t, proxy, key)

	const deadline = 30 * time.Second
	ctx, cancel := context.WithTimeout(t.Context(), deadline)
	defer cancel()
	start := time.Now()
	code, body, hdr, err := get(ctx, client(deadline), th, host, "/")
	if err != nil {
		t.Fatalf("request to a never-ready revision: %v (after %v)\n%s", err, time.Since(start), run.proc.LogTail(30))
	}
	t.Logf("answered %d after %v: %q", code, time.Since(start), body)
	if code != 503 || hdr.Get("Retry-After") == "" || hdr.Get("X-Thaw-Wake-Failure") != revision.WakeActivationTimeout ||
		!strings.Contains(body, ns+"/"+name) || !strings.Contains(body, "activation timeout (2s)") {
		t.Fatalf("answer %d %q (Retry-After %q, x-thaw-wake-failure %q); want 503 with Retry-After, ActivationTimeout and a body naming the revision and the timeout",
			code, body, hdr.Get("Retry-After"), hdr.Get("X-Thaw-Wake-Failure"))
	}
}
