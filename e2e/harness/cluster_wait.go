package harness

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// WaitForPods lists the pods of namespace ns matching the label selector
// every 100 ms until done accepts the list, and returns that list. It fails
// the test (showing the last list) when ctx ends or listing fails.
func WaitForPods(ctx context.Context, t testing.TB, client kubernetes.Interface, ns, selector string, done func([]corev1.Pod) bool) []corev1.Pod {
	t.Helper()
	var pods []corev1.Pod
	err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		list, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return false, err
		}
		pods = list.Items
		return done(pods), nil
	})
	if err != nil {
		t.Fatalf("waiting for pods %q in %s: %v; last seen: %s", selector, ns, err, DescribePods(pods))
	}
	return pods
}

// PodReady reports whether the pod's Ready condition is True.
func PodReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// AllPodsReady reports whether every pod is Ready (true for none).
func AllPodsReady(pods []corev1.Pod) bool {
	for i := range pods {
		if !PodReady(&pods[i]) {
			return false
		}
	}
	return true
}

// DescribePods renders name, node, phase, IP and readiness of each pod on
// one line, for failure messages.
func DescribePods(pods []corev1.Pod) string {
	parts := make([]string, 0, len(pods))
	for i := range pods {
		pod := &pods[i]
		parts = append(parts, fmt.Sprintf("%s(node=%q phase=%s ip=%q ready=%v deleting=%v)",
			pod.Name, pod.Spec.NodeName, pod.Status.Phase, pod.Status.PodIP, PodReady(pod), pod.DeletionTimestamp != nil))
	}
	return "[" + strings.Join(parts, " ") + "]"
}
