//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/thaw-dev/thaw/e2e/harness"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
)

// TestClusterSmoke checks the e2e control plane end to end: RBAC applies to
// service-account tokens; a Deployment
// gets Running, Ready pods with loopback IPs from the fake nodes' pod CIDR,
// each pod IP serves HTTP through the pod runner as soon as it is Ready, and
// scaling through the /scale subresource to 0 removes the pods and stops
// their servers.
func TestClusterSmoke(t *testing.T) {
	start := time.Now()
	c := harness.StartCluster(t, harness.ClusterOptions{Nodes: 2})
	t.Logf("cluster started in %v", time.Since(start).Round(time.Millisecond))

	const ns, name, port = "smoke", "web", 8080
	runner := harness.StartPodRunner(t, c.Client, harness.PodRunnerOptions{
		Namespace:    ns,
		StartupDelay: 300 * time.Millisecond,
		Body:         func(pod *corev1.Pod) string { return "hello from " + pod.Name + "\n" },
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	// RBAC is on: a service account without bindings may not list pods.
	sa := c.ClientForToken(t, c.ServiceAccountToken(t, ns, "nobody"))
	if _, err := sa.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("list pods as service account without roles: err %v, want Forbidden", err)
	}

	deployStart := time.Now()
	if _, err := c.Client.AppsV1().Deployments(ns).Create(ctx, smokeDeployment(ns, name, port, 3), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create deployment: %v", err)
	}

	pods := harness.WaitForPods(ctx, t, c.Client, ns, "app="+name, func(pods []corev1.Pod) bool {
		return len(pods) == 3 && harness.AllPodsReady(pods)
	})
	t.Logf("3 pods Ready %v after create: %s", time.Since(deployStart).Round(time.Millisecond), harness.DescribePods(pods))
	client := &http.Client{Timeout: 10 * time.Second}
	var urls []string
	for _, pod := range pods {
		ip := net.ParseIP(pod.Status.PodIP)
		if ip == nil || !strings.HasPrefix(pod.Status.PodIP, harness.PodCIDRPrefix) {
			t.Fatalf("pod %s IP %q, want one in %s0.0/16", pod.Name, pod.Status.PodIP, harness.PodCIDRPrefix)
		}
		if pod.Status.Phase != corev1.PodRunning {
			t.Fatalf("pod %s phase %s, want Running", pod.Name, pod.Status.Phase)
		}
		// Ready is set by the pod runner once it listens, so the first
		// request must succeed without retries.
		url := fmt.Sprintf("http://%s/", net.JoinHostPort(pod.Status.PodIP, fmt.Sprint(port)))
		urls = append(urls, url)
		body, podHeader := smokeGet(t, client, url)
		if want := "hello from " + pod.Name + "\n"; body != want || podHeader != pod.Name {
			t.Fatalf("GET %s = %q (X-Pod-Name %q), want %q from pod %s", url, body, podHeader, want, pod.Name)
		}
		if got := runner.PodStats(ns, pod.Name).Requests; got != 1 {
			t.Fatalf("pod runner counted %d requests for %s, want 1", got, pod.Name)
		}
	}

	// The deployment controller writes the same object: retry on conflict
	// with a fresh read of /scale.
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		scale, err := c.Client.AppsV1().Deployments(ns).GetScale(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		scale.Spec.Replicas = 0
		_, err = c.Client.AppsV1().Deployments(ns).UpdateScale(ctx, name, scale, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("update scale: %v", err)
	}
	scaleStart := time.Now()
	harness.WaitForPods(ctx, t, c.Client, ns, "app="+name, func(pods []corev1.Pod) bool { return len(pods) == 0 })
	t.Logf("pods gone %v after scale to 0", time.Since(scaleStart).Round(time.Millisecond))
	for _, pod := range pods {
		smokeWaitNotServing(ctx, t, runner, ns, pod.Name)
	}
	for _, url := range urls {
		if resp, err := client.Get(url); err == nil {
			_ = resp.Body.Close()
			t.Fatalf("GET %s after scale to 0: status %d, want connection refused", url, resp.StatusCode)
		}
	}
}

func smokeDeployment(ns, name string, port int32, replicas int32) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name:  "app",
					Image: "registry.invalid/web:1", // never pulled: kwok runs no containers
					Ports: []corev1.ContainerPort{{ContainerPort: port}},
				}}},
			},
		},
	}
}

func smokeWaitNotServing(ctx context.Context, t *testing.T, runner *harness.PodRunner, ns, name string) {
	t.Helper()
	err := wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(context.Context) (bool, error) {
		return !runner.Serving(ns, name), nil
	})
	if err != nil {
		t.Fatalf("pod runner still serves %s/%s: %v", ns, name, err)
	}
}

func smokeGet(t *testing.T, client *http.Client, url string) (body, podName string) {
	t.Helper()
	resp, err := client.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer func() { _ = resp.Body.Close() }()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: read body: %v", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: status %d: %s", url, resp.StatusCode, data)
	}
	return string(data), resp.Header.Get("X-Pod-Name")
}
