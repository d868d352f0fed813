//go:build e2e

package e2e

import (
	"net"
	"slices"
	"strconv"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/thaw-dev/thaw/platform/kube"
	"github.com/thaw-dev/thaw/revision"
)

// fixedLoad is the platform's LoadSource in this test: one backend busy.
type fixedLoad struct {
	mu   sync.Mutex
	busy map[string]int
}

func (l *fixedLoad) BackendInFlight(revision.Key) map[string]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.busy
}

// TestKubeScaleDownRemovesIdlePods: a Deployment revision at 3 pods is
// scaled to 1 while thaw knows one pod is busy: thaw, as its ServiceAccount
// with the RBAC of manifests/, sets that pod's
// controller.kubernetes.io/pod-deletion-cost before patching /scale, and
// the real ReplicaSet controller then deletes the two idle pods. The busy
// pod is the most recently created one, which the controller would
// otherwise tend to delete first.
func TestKubeScaleDownRemovesIdlePods(t *testing.T) {
	env := startKubeEnv(t, 0)
	c := env.Cluster
	const ns = "costs"
	createNamespace(t, c, ns)
	load := &fixedLoad{}
	kp := startKubePlatform(t, env, func(o *kube.Options) { o.Load = load })
	key := revision.Key{Namespace: ns, Name: "web"}
	if _, err := c.Client.AppsV1().Deployments(ns).Create(t.Context(), revisionDeployment(ns, "web", 3, nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	kp.wait(t, "3 ready backends", func(s *revision.Snapshot) bool { return len(readyBackends(s, key)) == 3 })
	pods := waitPods(t, c, ns, "web", func(p []corev1.Pod) bool { return len(podIPs(p)) == 3 })
	slices.SortFunc(pods, func(a, b corev1.Pod) int {
		return a.CreationTimestamp.Compare(b.CreationTimestamp.Time)
	})
	busy := pods[len(pods)-1]
	load.mu.Lock()
	load.busy = map[string]int{net.JoinHostPort(busy.Status.PodIP, strconv.Itoa(8080)): 2}
	load.mu.Unlock()

	if err := kp.P.SetScale(t.Context(), key, 1); err != nil {
		t.Fatalf("SetScale 1: %v", err)
	}
	got, err := c.Client.CoreV1().Pods(ns).Get(t.Context(), busy.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if v := got.Annotations[kube.AnnotationPodDeletionCost]; v != "2" {
		t.Errorf("busy pod %s deletion cost %q, want \"2\"", busy.Name, v)
	}
	left := waitPods(t, c, ns, "web", func(p []corev1.Pod) bool { return len(p) == 1 })
	if left[0].Name != busy.Name {
		t.Fatalf("the ReplicaSet controller kept %s, want the busy pod %s", left[0].Name, busy.Name)
	}
}
