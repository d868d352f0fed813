package kube

import (
	"errors"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/thaw-dev/thaw/api/v1alpha1"
	"github.com/thaw-dev/thaw/revision"
)

// scaledObjectFor is a KEDA ScaledObject scaling the Deployment name
// (ref's apiVersion and kind left to KEDA's defaults unless given).
func scaledObjectFor(name, target string, kind string) *unstructured.Unstructured {
	ref := map[string]any{"name": target}
	if kind != "" {
		ref["apiVersion"], ref["kind"] = "apps/v1", kind
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "keda.sh/v1alpha1", "kind": "ScaledObject",
		"metadata": map[string]any{"namespace": testNS, "name": name},
		"spec":     map[string]any{"scaleTargetRef": ref, "triggers": []any{map[string]any{"type": "cpu"}}},
	}}
}

// TestScaledObjectLeavesWorkloadAlone: a KEDA ScaledObject on a
// Revision's Deployment (KEDA's default kind) or on an annotated
// StatefulSet makes the revision invalid naming the ScaledObject (Event,
// RevisionSplit reason ScaledByOtherAutoscaler), SetScale writes nothing,
// and deleting the ScaledObject makes it valid again; the unrelated
// revision is untouched.
func TestScaledObjectLeavesWorkloadAlone(t *testing.T) {
	split := testSplit(tt("web", 100, ""))
	split.Name = "web"
	thaw := []runtime.Object{
		toUnstructured(t, splitTestRevision("web"), v1alpha1.RevisionKind),
		toUnstructured(t, split, v1alpha1.RevisionSplitKind),
		scaledObjectFor("web-so", "web", ""),
		scaledObjectFor("db-so", "db", "StatefulSet"),
		scaledObjectFor("other-kind", "plain", "StatefulSet"), // a StatefulSet "plain" does not exist
	}
	se := newSplitEnv(t, true, thaw, deployment("web", 1, nil), statefulSet("db", 1, hosts("db")), deployment("plain", 1, hosts("plain")))
	snap := se.waitFor(t, "sync", func(s *revision.Snapshot) bool { return s.Synced })
	for name, so := range map[string]string{"web": "KEDA ScaledObject apps/web-so", "db": "KEDA ScaledObject apps/db-so"} {
		if err := snap.Invalid[key(name)]; !errors.Is(err, ErrOtherAutoscaler) || !strings.Contains(err.Error(), so) {
			t.Errorf("%s: invalid %v, want ErrOtherAutoscaler naming %s", name, err, so)
		}
		if err := se.p.SetScale(se.ctx, key(name), 3); !errors.Is(err, ErrOtherAutoscaler) {
			t.Errorf("SetScale(%s) with a ScaledObject: %v, want ErrOtherAutoscaler", name, err)
		}
	}
	if snap.Get(key("plain")) == nil {
		t.Errorf("plain (a ScaledObject names a StatefulSet of its name, not its Deployment) not routed: %v", snap.Invalid[key("plain")])
	}
	se.mu.Lock()
	n := len(se.testEnv.patches)
	se.mu.Unlock()
	if n != 0 {
		t.Errorf("%d /scale patches, want none", n)
	}
	se.events(t, "web-so", "db-so")
	se.ready(t, "web", v1alpha1.ReasonOtherAutoscaler)

	if err := se.dyn.Resource(ScaledObjectsResource).Namespace(testNS).Delete(se.ctx, "web-so", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	se.waitFor(t, "web valid once its ScaledObject is gone", func(s *revision.Snapshot) bool { return s.Get(key("web")) != nil })
	se.ready(t, "web", v1alpha1.ReasonResolved)
}

// TestScaledObjectsNotListable: KEDA's CRD is served but thaw may not list
// ScaledObjects (RBAC narrowed): the platform still syncs (an informer it
// may not list would never sync), without ScaledObject detection.
func TestScaledObjectsNotListable(t *testing.T) {
	forbid := func(d *dynamicfake.FakeDynamicClient) {
		d.PrependReactor("list", "scaledobjects", func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewForbidden(ScaledObjectsResource.GroupResource(), "", errors.New("RBAC"))
		})
	}
	thaw := []runtime.Object{toUnstructured(t, splitTestRevision("web"), v1alpha1.RevisionKind), scaledObjectFor("web-so", "web", "")}
	se := newSplitEnvWith(t, true, forbid, thaw, deployment("web", 1, nil))
	snap := se.waitFor(t, "sync without ScaledObjects", func(s *revision.Snapshot) bool { return s.Synced })
	if snap.Get(key("web")) == nil || se.p.scaledObjects != nil {
		t.Errorf("web %v (invalid: %v), ScaledObjects watched: %v; want routed, not watched", snap.Get(key("web")), snap.Invalid[key("web")], se.p.scaledObjects != nil)
	}
}
