//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"

	"github.com/thaw-dev/thaw/api/v1alpha1"
	"github.com/thaw-dev/thaw/platform/kube"
)

// TestKubeRevisionSplitStatus: on the real control plane, with thaw
// running under the ServiceAccount and RBAC of manifests/, the leader
// writes each RevisionSplit's status (Ready Resolved, RevisionNotFound,
// ScaledByOtherAutoscaler for a Revision whose Deployment a KEDA
// ScaledObject scales; observedGeneration; status.traffic) and Warning
// Events on the splits; a percent change moves observedGeneration, and
// deleting the ScaledObject resolves its split. KEDA's ScaledObject CRD
// is a minimal one of the same group, version and kind (KEDA itself does
// not run here); thaw reads only its scaleTargetRef.
func TestKubeRevisionSplitStatus(t *testing.T) {
	env := startKubeEnv(t, 200*time.Millisecond)
	c := env.Cluster
	const ns = "split"
	dyn := revisionNamespace(t, env, ns)
	installScaledObjectCRD(t, env)
	revs := dyn.Resource(v1alpha1.RevisionsResource).Namespace(ns)
	splits := dyn.Resource(v1alpha1.RevisionSplitsResource).Namespace(ns)
	sos := dyn.Resource(kube.ScaledObjectsResource).Namespace(ns)
	for _, name := range []string{"v1", "v2", "v3"} {
		if _, err := c.Client.AppsV1().Deployments(ns).Create(t.Context(), smokeDeployment(ns, name, 8080, 0), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	so := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "keda.sh/v1alpha1", "kind": "ScaledObject",
		"metadata": map[string]any{"namespace": ns, "name": "v3-so"},
		"spec":     map[string]any{"scaleTargetRef": map[string]any{"name": "v3"}},
	}}
	if _, err := sos.Create(t.Context(), so, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	startKubePlatform(t, env, func(o *kube.Options) { o.Revisions = kube.RevisionsOn })
	for _, name := range []string{"v1", "v2", "v3"} {
		createRevision(t, revs, ns, name, map[string]any{"scaleTargetRef": deployRef(name), "port": 8080})
	}
	mk := func(name string, traffic ...any) {
		t.Helper()
		obj := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": v1alpha1.SchemeGroupVersion.String(), "kind": v1alpha1.RevisionSplitKind,
			"metadata": map[string]any{"namespace": ns, "name": name},
			"spec":     map[string]any{"traffic": traffic},
		}}
		if _, err := splits.Create(t.Context(), obj, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create RevisionSplit %s: %v", name, err)
		}
	}
	entry := func(name string, percent int64) map[string]any {
		return map[string]any{"revisionName": name, "percent": percent}
	}
	mk("shop", entry("v1", 90), entry("v2", 10))
	mk("ghost", entry("v1", 90), entry("nope", 10))
	mk("keda", entry("v1", 50), entry("v3", 50))

	shop := waitSplit(t, splits, "shop", v1alpha1.ReasonResolved, 1)
	if len(shop.Status.Traffic) != 2 || shop.Status.Traffic[1].Reason != v1alpha1.ReasonRouted {
		t.Errorf("shop status.traffic %+v, want v1 and v2 Routed", shop.Status.Traffic)
	}
	ghost := waitSplit(t, splits, "ghost", v1alpha1.ReasonRevisionNotFound, 1)
	if c := meta.FindStatusCondition(ghost.Status.Conditions, v1alpha1.ConditionReady); c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, "nope") {
		t.Errorf("ghost Ready %+v, want False naming nope", c)
	}
	keda := waitSplit(t, splits, "keda", v1alpha1.ReasonOtherAutoscaler, 1)
	if c := meta.FindStatusCondition(keda.Status.Conditions, v1alpha1.ConditionReady); !strings.Contains(c.Message, "ScaledObject split/v3-so") {
		t.Errorf("keda Ready message %q does not name the ScaledObject", c.Message)
	}
	waitRevisionStatus(t, revs, "v3", "refused: a ScaledObject scales its target", func(st v1alpha1.RevisionStatus) bool {
		return hasCondition(st, v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonOtherAutoscaler)
	})
	d, err := c.Client.AppsV1().Deployments(ns).Get(t.Context(), "v3", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range d.ManagedFields {
		if mf.Manager == kube.FieldManager {
			t.Errorf("thaw wrote Deployment v3 (%s %s) while a ScaledObject scales it", mf.Operation, mf.Subresource)
		}
	}
	waitSplitEvents(t, env, ns, map[string]string{"ghost": v1alpha1.ReasonRevisionNotFound, "keda": v1alpha1.ReasonOtherAutoscaler})
	// `kubectl get rsplit`: the CRD's printer columns show Ready and why.
	body, err := c.Client.Discovery().RESTClient().Get().
		AbsPath("/apis", v1alpha1.GroupName, v1alpha1.Version, "namespaces", ns, "revisionsplits", "ghost").
		SetHeader("Accept", "application/json;as=Table;g=meta.k8s.io;v=v1").DoRaw(t.Context())
	var table metav1.Table
	if err != nil || json.Unmarshal(body, &table) != nil || len(table.Rows) != 1 {
		t.Fatalf("get rsplit ghost as Table: %v %s", err, body)
	}
	cols := map[string]any{}
	for i, col := range table.ColumnDefinitions {
		cols[col.Name] = table.Rows[0].Cells[i]
	}
	if cols["Ready"] != "False" || cols["Reason"] != v1alpha1.ReasonRevisionNotFound {
		t.Errorf("kubectl get rsplit ghost: %v, want Ready False, Reason %s", cols, v1alpha1.ReasonRevisionNotFound)
	}

	patch := []byte(`{"spec":{"traffic":[{"revisionName":"v1","percent":50},{"revisionName":"v2","percent":50}]}}`)
	if _, err := splits.Patch(t.Context(), "shop", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	shop = waitSplit(t, splits, "shop", v1alpha1.ReasonResolved, 2)
	if shop.Status.Traffic[1].Percent != 50 {
		t.Errorf("shop status.traffic after 50/50: %+v", shop.Status.Traffic)
	}
	if err := sos.Delete(t.Context(), "v3-so", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitSplit(t, splits, "keda", v1alpha1.ReasonResolved, 1)
}

// waitSplit polls a RevisionSplit (at most 60 s, a deadlock guard) until
// its status describes generation gen with Ready reason, and returns it.
func waitSplit(t *testing.T, splits dynamic.ResourceInterface, name, reason string, gen int64) v1alpha1.RevisionSplit {
	t.Helper()
	var last v1alpha1.RevisionSplit
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		u, err := splits.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &last); err != nil {
			return false, err
		}
		c := meta.FindStatusCondition(last.Status.Conditions, v1alpha1.ConditionReady)
		return c != nil && c.Reason == reason && last.Status.ObservedGeneration == gen && last.Generation == gen, nil
	})
	if err != nil {
		t.Fatalf("RevisionSplit %s: never Ready reason %s at generation %d: %v; last %+v", name, reason, gen, err, last)
	}
	return last
}

// waitSplitEvents waits (at most 60 s) for a Warning Event with the given
// reason on each named RevisionSplit.
func waitSplitEvents(t *testing.T, env *kubeEnv, ns string, want map[string]string) {
	t.Helper()
	var seen []string
	err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		evs, err := env.Cluster.Client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		seen = seen[:0]
		found := 0
		for _, e := range evs.Items {
			seen = append(seen, e.InvolvedObject.Kind+"/"+e.InvolvedObject.Name+" "+e.Type+" "+e.Reason)
			if e.InvolvedObject.Kind == v1alpha1.RevisionSplitKind && e.Type == "Warning" && want[e.InvolvedObject.Name] == e.Reason {
				found++
			}
		}
		return found >= len(want), nil
	})
	if err != nil {
		t.Fatalf("Events %v lack a Warning for each of %v: %v", seen, want, err)
	}
}

// installScaledObjectCRD serves keda.sh/v1alpha1 ScaledObjects with a
// minimal schema of our own (fields kept as given) and waits until the
// apiserver serves them.
func installScaledObjectCRD(t *testing.T, env *kubeEnv) {
	t.Helper()
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "scaledobjects.keda.sh"},
		"spec": map[string]any{
			"group": "keda.sh", "scope": "Namespaced",
			"names": map[string]any{"kind": "ScaledObject", "listKind": "ScaledObjectList", "plural": "scaledobjects", "singular": "scaledobject"},
			"versions": []any{map[string]any{"name": "v1alpha1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}},
		},
	}}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := applyObjects(ctx, env.Cluster.Config, []*unstructured.Unstructured{crd}, false); err != nil {
		t.Fatalf("apply ScaledObject CRD: %v", err)
	}
	dyn, err := dynamic.NewForConfig(env.Cluster.Config)
	if err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		_, err := dyn.Resource(kube.ScaledObjectsResource).List(ctx, metav1.ListOptions{Limit: 1})
		return err == nil, nil
	}); err != nil {
		t.Fatalf("ScaledObject CRD not served: %v", err)
	}
}
