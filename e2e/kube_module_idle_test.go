//go:build e2e

package e2e

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/thaw-dev/thaw/api/v1alpha1"
	"github.com/thaw-dev/thaw/e2e/harness"
	"github.com/thaw-dev/thaw/revision"
)

// TestKubeModuleIdleHoldPath runs `thaw run --activator=module` (the idle
// hold path is its default) against the real control plane with a real
// Envoy loading the module: a Revision at zero has no cluster in Envoy's
// config_dump while its virtual host routes through the module's header;
// a request wakes it through /scale and is served, the cluster appears;
// once the Revision is back at zero (/scale 0), its cluster is removed
// from Envoy again. Its on-demand-hosts arm runs the same Revision with
// `thaw run --on-demand-hosts` (kubeOnDemandHosts).
func TestKubeModuleIdleHoldPath(t *testing.T) {
	env := startKubeEnvWith(t, harness.PodRunnerOptions{StartupDelay: 200 * time.Millisecond})
	c := env.Cluster
	const ns = "idle"
	dyn := revisionNamespace(t, env, ns)
	if _, err := c.Client.AppsV1().Deployments(ns).Create(t.Context(), smokeDeployment(ns, "hello", 8080, 0), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	createRevision(t, dyn.Resource(v1alpha1.RevisionsResource).Namespace(ns), ns, "hello", map[string]any{
		"scaleTargetRef": deployRef("hello"), "port": 8080, "hosts": []any{"hello.example.com"},
		"autoscaling": map[string]any{"window": "6s", "scaleToZeroGracePeriod": "1s", "target": 5, "targetBurstCapacity": 0},
	})

	kubeconfig := thawKubeconfig(t, c)
	key := revision.Key{Namespace: ns, Name: "hello"}
	// Each arm runs its own thaw run and Envoy (stopped when it ends) on
	// the same cluster and Revision, back at zero between them.
	t.Run("default", func(t *testing.T) { kubeIdleHoldPath(t, c, kubeconfig, key) })
	t.Run("on-demand-hosts", func(t *testing.T) { kubeOnDemandHosts(t, kubeconfig, key) })
}

// startKubeModuleRun starts `thaw run --activator=module` with more flags
// and one Envoy (envoy-a) loading the module through its bridge; th
// reaches Envoy's data plane and thaw's admin.
func startKubeModuleRun(t *testing.T, kubeconfig string, extra ...string) (run *thawRun, proxy *harness.Envoy, th *harness.Thaw) {
	t.Helper()
	return startThawRunEnvoy(t, kubeconfig, thawRunEnvoyOptions{Module: true, Extra: extra})
}

// kubeIdleHoldPath is TestKubeModuleIdleHoldPath's default arm.
func kubeIdleHoldPath(t *testing.T, c *harness.Cluster, kubeconfig string, key revision.Key) {
	run, proxy, th := startKubeModuleRun(t, kubeconfig)
	ns := key.Namespace
	cluster := `"` + revision.ClusterName(key) + `"`
	dump := func(resource string) string { return configDump(t, proxy, resource) }
	hasCluster := func() bool { return strings.Contains(dump("dynamic_active_clusters"), cluster) }
	waitStatus(t, th, ns+"/hello", 30*time.Second, "the Revision at zero in proxy mode", func(r map[string]any) bool {
		return r["mode"] == "proxy" && num(r, "ready") == 0
	})
	waitEnvoyRoutes(t, proxy, key)
	if routes := dump("dynamic_route_configs"); !strings.Contains(routes, `"cluster_header": "x-thaw-cluster"`) {
		t.Fatalf("the Revision's route does not take its cluster from the module's header:\n%.2000s", routes)
	}
	if hasCluster() {
		t.Fatalf("Envoy has cluster %s for a Revision at zero", cluster)
	}

	coldStart(t, th, run, "hello.example.com", ns+"/hello-")
	if err := pollFor(t, hasCluster); err != nil {
		t.Fatalf("the woken Revision's cluster %s never reached Envoy: %v", cluster, err)
	}

	waitStatus(t, th, ns+"/hello", 45*time.Second, "back at zero", func(r map[string]any) bool {
		return r["mode"] == "proxy" && num(r, "ready") == 0 && num(r, "desired") == 0
	})
	if sc, err := c.Client.AppsV1().Deployments(ns).GetScale(t.Context(), "hello", metav1.GetOptions{}); err != nil || sc.Spec.Replicas != 0 {
		t.Fatalf("/scale replicas = %v, %v; want 0", sc, err)
	}
	if err := pollFor(t, func() bool { return !hasCluster() }); err != nil {
		t.Fatalf("cluster %s still in Envoy after the Revision went back to zero: %v", cluster, err)
	}
}
