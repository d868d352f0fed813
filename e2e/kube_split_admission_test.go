//go:build e2e

package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"

	"github.com/thaw-dev/thaw/api/v1alpha1"
	"github.com/thaw-dev/thaw/e2e/harness"
)

// TestKubeRevisionSplitAdmission applies the RevisionSplit CRD of
// manifests/ to a real kube-apiserver and checks that its schema and CEL
// rules admit a valid split and refuse bad ones with the rule's message.
func TestKubeRevisionSplitAdmission(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	api, err := harness.StartAPIServer(ctx, t.TempDir(), "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = api.Stop() })
	var crds []*unstructured.Unstructured
	for _, o := range kustomizeBuild(t, "manifests") {
		if o.GetKind() == "CustomResourceDefinition" && o.GetName() == "revisionsplits.thaw.dev" {
			crds = append(crds, o)
		}
	}
	if len(crds) != 1 {
		t.Fatalf("manifests/ hold no CRD revisionsplits.thaw.dev")
	}
	if err := applyObjects(ctx, api.Config, crds, false); err != nil {
		t.Fatalf("apply CRD: %v", err)
	}
	dyn, err := dynamic.NewForConfig(api.Config)
	if err != nil {
		t.Fatal(err)
	}
	splits := dyn.Resource(v1alpha1.RevisionSplitsResource).Namespace("default")
	if err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		_, err := splits.List(ctx, metav1.ListOptions{Limit: 1})
		return err == nil, nil
	}); err != nil {
		t.Fatalf("RevisionSplit CRD not served: %v", err)
	}
	split := func(name string, traffic ...map[string]any) *unstructured.Unstructured {
		list := make([]any, 0, len(traffic))
		for _, m := range traffic {
			list = append(list, m)
		}
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": v1alpha1.SchemeGroupVersion.String(), "kind": v1alpha1.RevisionSplitKind,
			"metadata": map[string]any{"name": name, "namespace": "default"},
			"spec":     map[string]any{"traffic": list},
		}}
	}
	tt := func(name string, percent int64, tag string) map[string]any {
		m := map[string]any{"revisionName": name, "percent": percent}
		if tag != "" {
			m["tag"] = tag
		}
		return m
	}
	if _, err := splits.Create(ctx, split("good", tt("v1", 90, ""), tt("v2", 10, "canary"), tt("v0", 0, "prev")), metav1.CreateOptions{}); err != nil {
		t.Fatalf("valid 90/10/0 split refused: %v", err)
	}
	for name, c := range map[string]struct {
		obj  *unstructured.Unstructured
		want string
	}{
		"sum 90":      {split("sum", tt("v1", 80, ""), tt("v2", 10, "")), "traffic percents must sum to 100"},
		"tag twice":   {split("tags", tt("v1", 50, "x"), tt("v2", 50, "x")), "each tag must be unique"},
		"name twice":  {split("names", tt("v1", 50, ""), tt("v1", 50, "")), "Duplicate value"},
		"percent 101": {split("big", tt("v1", 101, "")), "less than or equal to 100"},
		"empty":       {split("empty"), "should have at least 1 items"},
		"bad tag":     {split("badtag", tt("v1", 100, "Canary")), "spec.traffic[0].tag"},
	} {
		_, err := splits.Create(ctx, c.obj, metav1.CreateOptions{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: create = %v, want refused with %q", name, err, c.want)
		}
	}
}
