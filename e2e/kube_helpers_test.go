//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap/zaptest"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/thaw-dev/thaw/e2e/harness"
	"github.com/thaw-dev/thaw/platform/kube"
	"github.com/thaw-dev/thaw/revision"
	"github.com/thaw-dev/thaw/xds/translate"
)

// thawNamespace and thawServiceAccount are those of manifests/base.
const (
	thawNamespace      = "thaw-system"
	thawServiceAccount = "thaw"
)

// kubeEnv is a test cluster with thaw's RBAC from manifests/ installed and a
// client that authenticates as thaw's ServiceAccount, never as admin.
type kubeEnv struct {
	Cluster *harness.Cluster
	Runner  *harness.PodRunner
	// ThawConfig and ThawClient authenticate with the token of
	// thaw-system/thaw: what thaw gets in-cluster.
	ThawConfig *rest.Config
	ThawClient kubernetes.Interface
	// Manifests are the objects of `kustomize build manifests/`.
	Manifests []*unstructured.Unstructured
}

// startKubeEnv starts a cluster and a pod runner (pods become Ready once
// they serve, after startupDelay), applies the RBAC objects of manifests/
// (Namespace, ServiceAccounts, ClusterRole/Binding, Role/Binding) as admin,
// and returns clients for thaw's ServiceAccount token.
func startKubeEnv(t *testing.T, startupDelay time.Duration) *kubeEnv {
	t.Helper()
	return startKubeEnvWith(t, harness.PodRunnerOptions{StartupDelay: startupDelay})
}

// startKubeEnvWith is startKubeEnv with every pod runner option.
func startKubeEnvWith(t *testing.T, runner harness.PodRunnerOptions) *kubeEnv {
	t.Helper()
	c := harness.StartCluster(t, harness.ClusterOptions{})
	env := &kubeEnv{Cluster: c, Manifests: kustomizeBuild(t, "manifests")}
	env.Runner = harness.StartPodRunner(t, c.Client, runner)
	var rbac []*unstructured.Unstructured
	for _, o := range env.Manifests {
		switch o.GetKind() {
		case "Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding":
			rbac = append(rbac, o)
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := applyObjects(ctx, c.Config, rbac, false); err != nil {
		t.Fatalf("apply RBAC from manifests/: %v", err)
	}
	token := c.ServiceAccountToken(t, thawNamespace, thawServiceAccount)
	env.ThawConfig = c.ConfigForToken(token)
	env.ThawClient = c.ClientForToken(t, token)
	return env
}

// kustomizeBuild builds a kustomization directory of the repository (path
// relative to the repository root) with krusty, the library `kubectl apply
// -k` embeds.
func kustomizeBuild(t testing.TB, dir string) []*unstructured.Unstructured {
	t.Helper()
	rm, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), "../"+dir)
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	var out []*unstructured.Unstructured
	for _, r := range rm.Resources() {
		j, err := r.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(j); err != nil {
			t.Fatal(err)
		}
		out = append(out, u)
	}
	return out
}

// applyObjects server-side applies objects in order through the dynamic
// client, mapping kinds with a discovery REST mapper. With dryRun the
// apiserver runs admission and validation and stores nothing (what
// `kubectl apply --dry-run=server` asks for).
func applyObjects(ctx context.Context, cfg *rest.Config, objs []*unstructured.Unstructured, dryRun bool) error {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return err
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	opts := metav1.ApplyOptions{FieldManager: "thaw-e2e", Force: true}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	for _, o := range objs {
		gvk := o.GroupVersionKind()
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			return fmt.Errorf("%s %s: %w", gvk, o.GetName(), err)
		}
		var ri dynamic.ResourceInterface = dyn.Resource(m.Resource)
		if m.Scope.Name() == "namespace" {
			ri = dyn.Resource(m.Resource).Namespace(o.GetNamespace())
		}
		if _, err := ri.Apply(ctx, o.GetName(), o, opts); err != nil {
			return fmt.Errorf("apply %s %s/%s: %w", gvk.Kind, o.GetNamespace(), o.GetName(), err)
		}
	}
	return nil
}

// kubePlatform is a kube.Platform running against the test cluster with
// thaw's ServiceAccount, feeding its own registry.
type kubePlatform struct {
	P      *kube.Platform
	Reg    *revision.Registry
	client kubernetes.Interface
}

// startKubePlatform builds and runs a platform; mutate may change the
// options (Namespace, Elected, StatusInterval...). Run's error is checked
// at cleanup.
func startKubePlatform(t *testing.T, env *kubeEnv, mutate func(*kube.Options)) *kubePlatform {
	t.Helper()
	reg := revision.NewRegistry(revision.RegistryOptions{})
	opts := kube.Options{
		Logger: zaptest.NewLogger(t), Client: env.ThawClient, RESTConfig: env.ThawConfig, Registry: reg,
		Registerer: prometheus.NewRegistry(), StatusInterval: 200 * time.Millisecond,
	}
	if mutate != nil {
		mutate(&opts)
	}
	p, err := kube.New(opts)
	if err != nil {
		t.Fatalf("kube.New: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("platform Run: %v", err)
		}
	})
	kp := &kubePlatform{P: p, Reg: reg, client: env.Cluster.Client}
	kp.wait(t, "initial sync", func(s *revision.Snapshot) bool { return s.Synced })
	return kp
}

// wait blocks until the registry satisfies cond, for at most 60 s (a
// deadlock guard on a loaded machine, not a timing assertion).
func (kp *kubePlatform) wait(t *testing.T, what string, cond func(*revision.Snapshot) bool) *revision.Snapshot {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	s, err := kp.Reg.WaitFor(ctx, cond)
	if err != nil {
		last := kp.Reg.Snapshot()
		var revs []string
		for _, r := range last.Sorted() {
			revs = append(revs, fmt.Sprintf("%s(%d ready, %s)", r.Key, len(r.ReadyBackends()), r.Mode))
		}
		t.Fatalf("waiting for %s: %v; revisions %v invalid %v; pods:\n%s", what, err, revs, last.Invalid, kp.describePods())
	}
	return s
}

// describePods lists every pod the platform's client can see, for failure
// messages.
func (kp *kubePlatform) describePods() string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	list, err := kp.client.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return err.Error()
	}
	return harness.DescribePods(list.Items)
}

// readyBackends returns the ready backends of key in s (nil if absent).
func readyBackends(s *revision.Snapshot, key revision.Key) []revision.Backend {
	if r := s.Get(key); r != nil {
		return r.ReadyBackends()
	}
	return nil
}

// createNamespace creates a namespace as admin.
func createNamespace(t *testing.T, c *harness.Cluster, ns string) {
	t.Helper()
	_, err := c.Client.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create namespace %s: %v", ns, err)
	}
}

// revisionDeployment returns a Deployment selecting app=<name> with one
// container port 8080, annotated as a thaw revision for host
// <name>.example.com plus extra annotations.
func revisionDeployment(ns, name string, replicas int32, extra map[string]string) *appsv1.Deployment {
	ann := map[string]string{kube.AnnotationHosts: name + ".example.com"}
	for k, v := range extra {
		ann[k] = v
	}
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: ann},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					// Terminating pods go at once: kwok plays no containers.
					TerminationGracePeriodSeconds: ptr.To[int64](0),
					Containers: []corev1.Container{{
						Name: "app", Image: "registry.invalid/app:1", // never pulled
						Ports: []corev1.ContainerPort{{ContainerPort: 8080}},
					}},
				},
			},
		},
	}
}

// revisionStatefulSet is revisionDeployment's StatefulSet twin.
func revisionStatefulSet(ns, name string, replicas int32, extra map[string]string) *appsv1.StatefulSet {
	d := revisionDeployment(ns, name, replicas, extra)
	return &appsv1.StatefulSet{
		ObjectMeta: d.ObjectMeta,
		Spec: appsv1.StatefulSetSpec{
			Replicas: d.Spec.Replicas, Selector: d.Spec.Selector, Template: d.Spec.Template,
			PodManagementPolicy: appsv1.ParallelPodManagement,
		},
	}
}

// waitEvent waits (at most 60 s) for an Event on the object ns/name with
// reason whose message contains every string of want, and returns it.
func waitEvent(t *testing.T, client kubernetes.Interface, ns, name, reason string, want ...string) corev1.Event {
	t.Helper()
	var found corev1.Event
	var seen []string
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		list, err := client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
		if err != nil {
			return false, err
		}
		seen = seen[:0]
		for _, ev := range list.Items {
			seen = append(seen, ev.Reason+": "+ev.Message)
			if ev.Reason != reason {
				continue
			}
			ok := true
			for _, w := range want {
				ok = ok && strings.Contains(ev.Message, w)
			}
			if ok {
				found = ev
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("no %s Event on %s/%s containing %q: %v; events seen: %q", reason, ns, name, want, err, seen)
	}
	return found
}

// waitPods waits (at most 60 s) until the pods selected by app=<app> in ns
// satisfy done.
func waitPods(t *testing.T, c *harness.Cluster, ns, app string, done func([]corev1.Pod) bool) []corev1.Pod {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	return harness.WaitForPods(ctx, t, c.Client, ns, "app="+app, done)
}

// podIPs returns the IPs of the Ready, non-terminating pods.
func podIPs(pods []corev1.Pod) map[string]bool {
	out := map[string]bool{}
	for i := range pods {
		if pods[i].DeletionTimestamp == nil && harness.PodReady(&pods[i]) {
			out[pods[i].Status.PodIP] = true
		}
	}
	return out
}

// backendIPs returns the addresses of backends.
func backendIPs(bs []revision.Backend) map[string]bool {
	out := map[string]bool{}
	for _, b := range bs {
		out[b.Address] = true
	}
	return out
}

// waitEnvoyRoutes waits (60 s at most) until Envoy's route table holds
// revision key's virtual host. thaw's status shows a revision as soon as
// thaw knows it, a moment before its virtual host reaches Envoy over VHDS;
// a request sent in between gets the catch-all's 404.
func waitEnvoyRoutes(t *testing.T, e *harness.Envoy, key revision.Key) {
	t.Helper()
	want := strconv.Quote(translate.VirtualHostName(revision.ClusterName(key)))
	err := pollFor(t, func() bool {
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		out, _, err := e.Admin(ctx, "/config_dump?resource=dynamic_route_configs")
		return err == nil && strings.Contains(out, want)
	})
	if err != nil {
		t.Fatalf("Envoy never received virtual host %s: %v", want, err)
	}
}
