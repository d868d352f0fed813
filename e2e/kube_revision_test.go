//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/thaw-dev/thaw/api/v1alpha1"
	"github.com/thaw-dev/thaw/platform/kube"
	"github.com/thaw-dev/thaw/revision"
)

// TestKubeRevisions runs platform/kube with the Revision CRD of manifests/
// installed, on the real control plane, as thaw's ServiceAccount: the CRD
// installs and its schema rejects bad specs at admission; Revisions scale
// a Deployment, a StatefulSet and a ReplicaSet through scaleTargetRef;
// status conditions follow a cold start and a scale to zero; the printer
// columns come through the API's Table output; an unusable Revision is
// reported without affecting the others; a workload a Revision scales
// ignores its annotations.
func TestKubeRevisions(t *testing.T) {
	env := startKubeEnv(t, 200*time.Millisecond)
	c := env.Cluster
	const ns = "revs"
	dyn := revisionNamespace(t, env, ns)
	revs := dyn.Resource(v1alpha1.RevisionsResource).Namespace(ns)

	t.Run("admission rejects bad specs", func(t *testing.T) {
		for _, tt := range []struct {
			name string
			spec map[string]any
			want string
		}{
			{"no scaleTargetRef", map[string]any{"port": 8080}, "spec.scaleTargetRef: Required value"},
			{"minScale above maxScale (CEL)", withAutoscaling(map[string]any{"minScale": 5, "maxScale": 2}), "minScale must be <= maxScale"},
			{"window out of range (CEL duration)", withAutoscaling(map[string]any{"window": "1s"}), "want a duration 6s..1h"},
			{"target-burst-capacity -2 (CEL)", withAutoscaling(map[string]any{"targetBurstCapacity": -2}), "want -1 or a number >= 0"},
			{"unknown protocol", map[string]any{"scaleTargetRef": deployRef("x"), "protocol": "h3"}, "spec.protocol: Unsupported value"},
			{"port out of range", map[string]any{"scaleTargetRef": deployRef("x"), "port": 70000}, "spec.port"},
			{"traffic percent above 100", map[string]any{"scaleTargetRef": deployRef("x"), "traffic": map[string]any{"percent": 101}}, "spec.traffic.percent"},
			{"traffic tag not a DNS label", map[string]any{"scaleTargetRef": deployRef("x"), "traffic": map[string]any{"tag": "Bad_Tag"}}, "spec.traffic.tag"},
			{"wake rule without a matcher (CEL)", withWake(map[string]any{"rules": []any{map[string]any{"name": "a"}}}),
				"want at least one of path, method, userAgent, headers"},
			{"wake rule name not a DNS label", withWake(map[string]any{"rules": []any{map[string]any{"name": "A_b", "path": "/"}}}),
				"spec.wake.rules[0].name"},
			{"warm window min-scale 0", withWake(map[string]any{"schedule": []any{map[string]any{"name": "w", "start": "@daily", "duration": "1h", "minScale": 0}}}),
				"spec.wake.schedule[0].minScale"},
			{"warm window too short (CEL duration)", withWake(map[string]any{"schedule": []any{map[string]any{"name": "w", "start": "@daily", "duration": "10s", "minScale": 1}}}),
				"want a duration 1m..168h"},
		} {
			_, err := revs.Create(t.Context(), revisionObject(ns, "bad", tt.spec), metav1.CreateOptions{})
			if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("%s: create error %v, want Invalid containing %q", tt.name, err, tt.want)
			}
		}
	})

	load := &fixedLoad{}
	kp := startKubePlatform(t, env, func(o *kube.Options) { o.Revisions, o.Load = kube.RevisionsOn, load })
	apps := c.Client.AppsV1()
	web := revision.Key{Namespace: ns, Name: "web-rev"}

	t.Run("cold start and scale to zero of a Deployment", func(t *testing.T) {
		if _, err := apps.Deployments(ns).Create(t.Context(), smokeDeployment(ns, "web", 8080, 0), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		createRevision(t, revs, ns, "web-rev", map[string]any{
			"scaleTargetRef": deployRef("web"), "port": 8080, "hosts": []any{"web.example.com"},
			"autoscaling": map[string]any{"minScale": 0, "target": 10, "window": "30s"},
		})
		s := kp.wait(t, "web-rev published with no pod", func(s *revision.Snapshot) bool { return s.Get(web) != nil })
		if r := s.Get(web); r.Spec.Target != 10 || r.Spec.StableWindow != 30*time.Second || r.Spec.Hosts[0] != "web.example.com" {
			t.Errorf("web-rev spec %+v", r.Spec)
		}
		waitRevisionStatus(t, revs, "web-rev", "scaled to zero at start", func(st v1alpha1.RevisionStatus) bool {
			return hasCondition(st, v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonRouted) &&
				hasCondition(st, v1alpha1.ConditionActive, metav1.ConditionFalse, v1alpha1.ReasonScaledToZero) &&
				st.ObservedGeneration == 1 && st.Selector == "app=web"
		})

		// The decider wants a pod (as a first request would make it):
		// Waking until a pod is ready.
		kp.Reg.SetDesiredScale(web, 1)
		waitRevisionStatus(t, revs, "web-rev", "waking", func(st v1alpha1.RevisionStatus) bool {
			return hasCondition(st, v1alpha1.ConditionActive, metav1.ConditionFalse, v1alpha1.ReasonWaking) &&
				st.DesiredScale != nil && *st.DesiredScale == 1
		})
		if err := kp.P.SetScale(t.Context(), web, 1); err != nil {
			t.Fatalf("SetScale 1: %v", err)
		}
		kp.wait(t, "web-rev with one ready backend", func(s *revision.Snapshot) bool { return len(readyBackends(s, web)) == 1 })
		st := waitRevisionStatus(t, revs, "web-rev", "serving", func(st v1alpha1.RevisionStatus) bool {
			return hasCondition(st, v1alpha1.ConditionActive, metav1.ConditionTrue, v1alpha1.ReasonServing) && st.ActualScale == 1
		})
		if d, err := apps.Deployments(ns).Get(t.Context(), "web", metav1.GetOptions{}); err != nil || *d.Spec.Replicas != 1 {
			t.Errorf("Deployment web replicas after SetScale 1: %v", err)
		}
		waitEvent(t, c.Client, ns, "web-rev", kube.ReasonScaled, "from 0 to 1")

		kp.Reg.SetDesiredScale(web, 0)
		if err := kp.P.SetScale(t.Context(), web, 0); err != nil {
			t.Fatalf("SetScale 0: %v", err)
		}
		kp.wait(t, "web-rev back to zero backends", func(s *revision.Snapshot) bool { return len(readyBackends(s, web)) == 0 })
		end := waitRevisionStatus(t, revs, "web-rev", "scaled to zero", func(st v1alpha1.RevisionStatus) bool {
			return hasCondition(st, v1alpha1.ConditionActive, metav1.ConditionFalse, v1alpha1.ReasonScaledToZero) &&
				st.ActualScale == 0 && st.Mode == v1alpha1.ModeProxy
		})
		before := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionReady).LastTransitionTime
		if after := meta.FindStatusCondition(end.Conditions, v1alpha1.ConditionReady).LastTransitionTime; !after.Equal(&before) {
			t.Errorf("Ready stayed True but its lastTransitionTime moved from %v to %v", before, after)
		}
		d, err := apps.Deployments(ns).Get(t.Context(), "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := d.Annotations[kube.AnnotationStatus]; ok {
			t.Errorf("status written onto the user's Deployment: %v", d.Annotations)
		}
	})

	t.Run("kubectl get revisions columns (Table output)", func(t *testing.T) {
		table := getRevisionTable(t, c.Client, ns)
		var cols []string
		for _, col := range table.ColumnDefinitions {
			cols = append(cols, col.Name)
		}
		if want := []string{"Name", "Target", "Mode", "Desired", "Ready", "Active", "Age"}; !slices.Equal(cols, want) {
			t.Fatalf("columns %v, want %v", cols, want)
		}
		var row []any
		for _, r := range table.Rows {
			if len(r.Cells) > 0 && r.Cells[0] == "web-rev" {
				row = r.Cells
			}
		}
		if len(row) != 7 || row[1] != "web" || row[2] != "proxy" || fmt.Sprint(row[3]) != "0" || fmt.Sprint(row[4]) != "0" || row[5] != v1alpha1.ReasonScaledToZero {
			t.Errorf("web-rev row %v, want [web-rev web proxy 0 0 ScaledToZero <age>]", row)
		}
	})

	t.Run("a StatefulSet and a ReplicaSet through scaleTargetRef", func(t *testing.T) {
		sts := revisionStatefulSet(ns, "db", 0, nil)
		delete(sts.Annotations, kube.AnnotationHosts) // not annotated: the Revision is the source
		if _, err := apps.StatefulSets(ns).Create(t.Context(), sts, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		d := smokeDeployment(ns, "rs", 8080, 0)
		rs := &appsv1.ReplicaSet{ObjectMeta: d.ObjectMeta, Spec: appsv1.ReplicaSetSpec{Replicas: d.Spec.Replicas, Selector: d.Spec.Selector, Template: d.Spec.Template}}
		if _, err := apps.ReplicaSets(ns).Create(t.Context(), rs, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		createRevision(t, revs, ns, "db-rev", map[string]any{
			"scaleTargetRef": map[string]any{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "db"}, "hosts": []any{"db.example.com"},
		})
		createRevision(t, revs, ns, "rs-rev", map[string]any{
			"scaleTargetRef": map[string]any{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs"}, "hosts": []any{"rs.example.com"},
		})
		db, rsKey := revision.Key{Namespace: ns, Name: "db-rev"}, revision.Key{Namespace: ns, Name: "rs-rev"}
		kp.wait(t, "db-rev and rs-rev published", func(s *revision.Snapshot) bool { return s.Get(db) != nil && s.Get(rsKey) != nil })
		if err := kp.P.SetScale(t.Context(), db, 2); err != nil {
			t.Fatalf("SetScale db-rev 2: %v", err)
		}
		if err := kp.P.SetScale(t.Context(), rsKey, 1); err != nil {
			t.Fatalf("SetScale rs-rev 1: %v", err)
		}
		s := kp.wait(t, "2 StatefulSet and 1 ReplicaSet backends", func(s *revision.Snapshot) bool {
			return len(readyBackends(s, db)) == 2 && len(readyBackends(s, rsKey)) == 1
		})
		// Port 0: the pods' first container port.
		if b := readyBackends(s, db); b[0].Port != 8080 {
			t.Errorf("db-rev backends %v, want port 8080", b)
		}
		if got, err := apps.StatefulSets(ns).Get(t.Context(), "db", metav1.GetOptions{}); err != nil || *got.Spec.Replicas != 2 {
			t.Errorf("StatefulSet db after SetScale 2: %v", err)
		}
		if cur, ready, err := kp.P.GetScale(t.Context(), db); err != nil || cur != 2 || ready != 2 {
			t.Errorf("GetScale db-rev = %d, %d, %v; want 2, 2", cur, ready, err)
		}
	})

	t.Run("scale-down of a ReplicaSet target removes the idle pod", func(t *testing.T) {
		rsKey := revision.Key{Namespace: ns, Name: "rs-rev"}
		if err := kp.P.SetScale(t.Context(), rsKey, 2); err != nil {
			t.Fatalf("SetScale rs-rev 2: %v", err)
		}
		kp.wait(t, "2 ReplicaSet backends", func(s *revision.Snapshot) bool { return len(readyBackends(s, rsKey)) == 2 })
		pods := waitPods(t, c, ns, "rs", func(p []corev1.Pod) bool { return len(podIPs(p)) == 2 })
		slices.SortFunc(pods, func(a, b corev1.Pod) int { return a.CreationTimestamp.Compare(b.CreationTimestamp.Time) })
		busy := pods[len(pods)-1] // the controller would tend to delete the newest first
		load.mu.Lock()
		load.busy = map[string]int{net.JoinHostPort(busy.Status.PodIP, "8080"): 3}
		load.mu.Unlock()
		if err := kp.P.SetScale(t.Context(), rsKey, 1); err != nil {
			t.Fatalf("SetScale rs-rev 1: %v", err)
		}
		got, err := c.Client.CoreV1().Pods(ns).Get(t.Context(), busy.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if v := got.Annotations[kube.AnnotationPodDeletionCost]; v != "3" {
			t.Errorf("busy pod %s deletion cost %q, want \"3\"", busy.Name, v)
		}
		left := waitPods(t, c, ns, "rs", func(p []corev1.Pod) bool { return len(p) == 1 })
		if left[0].Name != busy.Name {
			t.Errorf("the ReplicaSet controller kept %s, want the busy pod %s", left[0].Name, busy.Name)
		}
	})

	t.Run("unusable Revisions are reported, others keep working", func(t *testing.T) {
		createRevision(t, revs, ns, "ghost", map[string]any{"scaleTargetRef": deployRef("missing"), "hosts": []any{"ghost.example.com"}})
		createRevision(t, revs, ns, "nohost", map[string]any{"scaleTargetRef": deployRef("web")})
		waitRevisionStatus(t, revs, "ghost", "ScaleTargetNotFound", func(st v1alpha1.RevisionStatus) bool {
			return st.Mode == v1alpha1.ModeInvalid && hasCondition(st, v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonScaleTargetNotFound)
		})
		waitEvent(t, c.Client, ns, "ghost", kube.ReasonInvalidConfiguration, "spec.scaleTargetRef", "missing")
		// nohost targets web, which web-rev (created first) scales. (No
		// hosts alone is valid: an Envoy Gateway backend has none.)
		waitRevisionStatus(t, revs, "nohost", "InvalidConfiguration", func(st v1alpha1.RevisionStatus) bool {
			c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionReady)
			return st.Mode == v1alpha1.ModeInvalid && c != nil && c.Status == metav1.ConditionFalse &&
				strings.Contains(c.Message, "web-rev") && !strings.Contains(c.Message, "spec.hosts")
		})
		s := kp.Reg.Snapshot()
		if s.Get(web) == nil || s.Invalid[web] != nil {
			t.Errorf("web-rev affected by invalid Revisions: %v", s.Invalid[web])
		}
	})

	t.Run("a workload a Revision scales ignores its annotations", func(t *testing.T) {
		if _, err := apps.Deployments(ns).Create(t.Context(), revisionDeployment(ns, "legacy", 0, nil), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		legacy := revision.Key{Namespace: ns, Name: "legacy"}
		kp.wait(t, "annotated legacy published", func(s *revision.Snapshot) bool { return s.Get(legacy) != nil })
		createRevision(t, revs, ns, "legacy-rev", map[string]any{"scaleTargetRef": deployRef("legacy"), "hosts": []any{"legacy.example.com"}})
		legacyRev := revision.Key{Namespace: ns, Name: "legacy-rev"}
		// The Revision takes over the host the annotation claimed.
		kp.wait(t, "legacy-rev replaces the annotated legacy", func(s *revision.Snapshot) bool {
			return s.Get(legacy) == nil && s.Invalid[legacy] == nil && s.Get(legacyRev) != nil
		})
		waitEvent(t, c.Client, ns, "legacy", kube.ReasonAnnotationsIgnored, "Revision "+ns+"/legacy-rev")
		if err := revs.Delete(t.Context(), "legacy-rev", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		kp.wait(t, "annotations count again once the Revision is gone", func(s *revision.Snapshot) bool {
			return s.Get(legacy) != nil && s.Get(legacyRev) == nil
		})
	})
}

// installRevisionCRD applies the CustomResourceDefinitions of manifests/
// (Revision and RevisionSplit) as admin and waits until the apiserver
// serves them.
func installRevisionCRD(t *testing.T, env *kubeEnv) {
	t.Helper()
	var crds []*unstructured.Unstructured
	for _, o := range env.Manifests {
		if o.GetKind() == "CustomResourceDefinition" {
			crds = append(crds, o)
		}
	}
	var names []string
	for _, c := range crds {
		names = append(names, c.GetName())
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{"revisions.thaw.dev", "revisionsplits.thaw.dev"}) {
		t.Fatalf("manifests/ hold CRDs %v, want revisions.thaw.dev and revisionsplits.thaw.dev", names)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := applyObjects(ctx, env.Cluster.Config, crds, false); err != nil {
		t.Fatalf("apply CRD: %v", err)
	}
	dyn, err := dynamic.NewForConfig(env.Cluster.Config)
	if err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		_, err := dyn.Resource(v1alpha1.RevisionsResource).List(ctx, metav1.ListOptions{Limit: 1})
		if err != nil {
			return false, nil
		}
		_, err = dyn.Resource(v1alpha1.RevisionSplitsResource).List(ctx, metav1.ListOptions{Limit: 1})
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("Revision CRD not served: %v", err)
	}
}

func deployRef(name string) map[string]any {
	return map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": name}
}

func withAutoscaling(a map[string]any) map[string]any {
	return map[string]any{"scaleTargetRef": deployRef("x"), "autoscaling": a}
}

func revisionObject(ns, name string, spec map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": v1alpha1.SchemeGroupVersion.String(), "kind": v1alpha1.RevisionKind,
		"metadata": map[string]any{"namespace": ns, "name": name},
		"spec":     spec,
	}}
}

func createRevision(t *testing.T, revs dynamic.ResourceInterface, ns, name string, spec map[string]any) {
	t.Helper()
	if _, err := revs.Create(t.Context(), revisionObject(ns, name, spec), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create Revision %s: %v", name, err)
	}
}

// waitRevisionStatus polls a Revision (at most 60 s) until its status
// satisfies cond, and returns that status.
func waitRevisionStatus(t *testing.T, revs dynamic.ResourceInterface, name, what string, cond func(v1alpha1.RevisionStatus) bool) v1alpha1.RevisionStatus {
	t.Helper()
	var last v1alpha1.RevisionStatus
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		u, err := revs.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		var r v1alpha1.Revision
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &r); err != nil {
			return false, err
		}
		last = r.Status
		return cond(r.Status), nil
	})
	if err != nil {
		b, _ := json.Marshal(last)
		t.Fatalf("Revision %s status: waiting for %s: %v; last status %s", name, what, err, b)
	}
	return last
}

func hasCondition(st v1alpha1.RevisionStatus, typ string, status metav1.ConditionStatus, reason string) bool {
	c := meta.FindStatusCondition(st.Conditions, typ)
	return c != nil && c.Status == status && c.Reason == reason
}

// getRevisionTable lists Revisions as `kubectl get revisions` does: the
// apiserver renders the CRD's printer columns as a meta.k8s.io Table.
func getRevisionTable(t *testing.T, client kubernetes.Interface, ns string) *metav1.Table {
	t.Helper()
	body, err := client.Discovery().RESTClient().Get().
		AbsPath("/apis", v1alpha1.GroupName, v1alpha1.Version, "namespaces", ns, "revisions").
		SetHeader("Accept", "application/json;as=Table;g=meta.k8s.io;v=v1").
		DoRaw(t.Context())
	if err != nil {
		t.Fatalf("list revisions as Table: %v", err)
	}
	var table metav1.Table
	if err := json.Unmarshal(body, &table); err != nil {
		t.Fatalf("decode Table: %v\n%s", err, body)
	}
	if table.Kind != "Table" {
		t.Fatalf("got kind %q, want Table", table.Kind)
	}
	return &table
}
