//go:build e2e

package e2e

import (
	"errors"
	"strings"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/thaw-dev/thaw/api/v1alpha1"
	"github.com/thaw-dev/thaw/platform/kube"
	"github.com/thaw-dev/thaw/revision"
)

// TestKubeRevisionHPA: on the real control plane, a HorizontalPodAutoscaler
// on a Revision's Deployment makes the Revision invalid with reason
// ScaledByOtherAutoscaler naming the HPA, thaw writes no /scale for it
// (SetScale refuses; the Deployment's managed fields never list thaw),
// and deleting the HPA makes the Revision routed again.
func TestKubeRevisionHPA(t *testing.T) {
	env := startKubeEnv(t, 200*time.Millisecond)
	c := env.Cluster
	const ns = "hpa"
	dyn := revisionNamespace(t, env, ns)
	revs := dyn.Resource(v1alpha1.RevisionsResource).Namespace(ns)
	kp := startKubePlatform(t, env, func(o *kube.Options) { o.Revisions = kube.RevisionsOn })
	if _, err := c.Client.AppsV1().Deployments(ns).Create(t.Context(), smokeDeployment(ns, "web", 8080, 1), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	minReplicas := int32(1)
	hpa := &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-hpa"},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{MinReplicas: &minReplicas, MaxReplicas: 3,
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}},
	}
	if _, err := c.Client.AutoscalingV2().HorizontalPodAutoscalers(ns).Create(t.Context(), hpa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	createRevision(t, revs, ns, "web-rev", map[string]any{"scaleTargetRef": deployRef("web"), "port": 8080})
	st := waitRevisionStatus(t, revs, "web-rev", "refused: an HPA scales its target", func(st v1alpha1.RevisionStatus) bool {
		return hasCondition(st, v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonOtherAutoscaler)
	})
	for _, cond := range st.Conditions {
		if cond.Type == v1alpha1.ConditionReady && !strings.Contains(cond.Message, "web-hpa") {
			t.Errorf("Ready message %q does not name the HPA", cond.Message)
		}
	}
	key := revision.Key{Namespace: ns, Name: "web-rev"}
	if err := kp.P.SetScale(t.Context(), key, 2); !errors.Is(err, kube.ErrOtherAutoscaler) {
		t.Errorf("SetScale with an HPA: %v, want ErrOtherAutoscaler", err)
	}
	d, err := c.Client.AppsV1().Deployments(ns).Get(t.Context(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range d.ManagedFields {
		if mf.Manager == "thaw" {
			t.Errorf("thaw wrote the Deployment (%s %s) while an HPA scales it", mf.Operation, mf.Subresource)
		}
	}
	if err := c.Client.AutoscalingV2().HorizontalPodAutoscalers(ns).Delete(t.Context(), "web-hpa", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitRevisionStatus(t, revs, "web-rev", "routed once the HPA is gone", func(st v1alpha1.RevisionStatus) bool {
		return hasCondition(st, v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonRouted)
	})
}
