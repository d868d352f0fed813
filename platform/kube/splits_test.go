package kube

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	fakediscovery "k8s.io/client-go/discovery/fake"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	scalefake "k8s.io/client-go/scale/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/thaw-dev/thaw/api/v1alpha1"
)

// toUnstructured converts a typed thaw object for the fake dynamic client.
func toUnstructured(t *testing.T, obj runtime.Object, kind string) *unstructured.Unstructured {
	t.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetAPIVersion(v1alpha1.SchemeGroupVersion.String())
	u.SetKind(kind)
	return u
}

func splitTestRevision(name string) *v1alpha1.Revision {
	return &v1alpha1.Revision{
		ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: name, UID: k8stypes.UID("uid-r-" + name), Generation: 1},
		Spec: v1alpha1.RevisionSpec{Port: 8080,
			ScaleTargetRef: v1alpha1.ScaleTargetRef{APIVersion: "apps/v1", Kind: "Deployment", Name: name}},
	}
}

// splitEnv is a Platform watching Revisions and RevisionSplits through a
// fake dynamic client, with every status patch counted.
type splitEnv struct {
	*testEnv
	dyn           *dynamicfake.FakeDynamicClient
	statusPatches atomic.Int32
}

// newSplitEnv starts the platform with the Revision and RevisionSplit
// CRDs served, and KEDA's ScaledObject CRD too when keda is set; thaw
// holds the dynamic client's objects.
func newSplitEnv(t *testing.T, keda bool, thaw []runtime.Object, kubeObjs ...runtime.Object) *splitEnv {
	return newSplitEnvWith(t, keda, nil, thaw, kubeObjs...)
}

// newSplitEnvWith is newSplitEnv with reactors added to the dynamic
// client before the platform starts.
func newSplitEnvWith(t *testing.T, keda bool, react func(*dynamicfake.FakeDynamicClient), thaw []runtime.Object, kubeObjs ...runtime.Object) *splitEnv {
	t.Helper()
	listKinds := map[schema.GroupVersionResource]string{
		v1alpha1.RevisionsResource: "RevisionList", v1alpha1.RevisionSplitsResource: "RevisionSplitList",
		ScaledObjectsResource: "ScaledObjectList",
	}
	se := &splitEnv{dyn: dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), listKinds, thaw...)}
	se.dyn.PrependReactor("patch", "revisionsplits", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() == "status" {
			se.statusPatches.Add(1)
		}
		return false, nil, nil
	})
	disc := &fakediscovery.FakeDiscovery{Fake: &k8stesting.Fake{Resources: []*metav1.APIResourceList{{
		GroupVersion: v1alpha1.SchemeGroupVersion.String(),
		APIResources: []metav1.APIResource{{Name: "revisions", Namespaced: true}, {Name: "revisionsplits", Namespaced: true}},
	}}}}
	if react != nil {
		react(se.dyn)
	}
	if keda {
		disc.Resources = append(disc.Resources, &metav1.APIResourceList{GroupVersion: ScaledObjectsResource.GroupVersion().String(),
			APIResources: []metav1.APIResource{{Name: ScaledObjectsResource.Resource, Namespaced: true}}})
	}
	se.testEnv = newEnv(t, func(o *Options) {
		o.Revisions, o.Dynamic, o.Discovery = RevisionsOn, se.dyn, disc
		o.Scales.(*scalefake.FakeScaleClient).AddReactor("get", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
			name := a.(k8stesting.GetAction).GetName()
			return true, &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNS},
				Spec: autoscalingv1.ScaleSpec{Replicas: 1}, Status: autoscalingv1.ScaleStatus{Selector: "app=" + name}}, nil
		})
	}, kubeObjs...)
	return se
}

// ready waits (at most 30 s, a deadlock guard) until the split's Ready
// condition has reason, and returns its status.
func (se *splitEnv) ready(t *testing.T, name, reason string) v1alpha1.RevisionSplitStatus {
	t.Helper()
	var last v1alpha1.RevisionSplitStatus
	ctx, cancel := context.WithTimeout(se.ctx, 30*time.Second)
	defer cancel()
	err := wait.PollUntilContextCancel(ctx, 20*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		u, err := se.dyn.Resource(v1alpha1.RevisionSplitsResource).Namespace(testNS).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		var s v1alpha1.RevisionSplit
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &s); err != nil {
			return false, err
		}
		last = s.Status
		c := meta.FindStatusCondition(s.Status.Conditions, v1alpha1.ConditionReady)
		return c != nil && c.Reason == reason, nil
	})
	if err != nil {
		t.Fatalf("RevisionSplit %s: Ready never %s; last status %+v", name, reason, last)
	}
	return last
}

// events drains Events until every wanted substring has been seen.
func (se *splitEnv) events(t *testing.T, want ...string) {
	t.Helper()
	seen := map[string]bool{}
	var all []string
	for len(seen) < len(want) {
		select {
		case ev := <-se.recorder.Events:
			all = append(all, ev)
			for _, w := range want {
				if strings.Contains(ev, w) {
					seen[w] = true
				}
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("Events %q lack some of %q", all, want)
		}
	}
}

// TestRevisionSplitStatus: the platform writes each RevisionSplit's
// status (Ready with the reason, observedGeneration, status.traffic) and
// a Warning Event naming the problem, only when the status changes; a
// split recovers (Normal Event) when the HPA on its Revision goes.
func TestRevisionSplitStatus(t *testing.T) {
	split := func(name string, traffic ...v1alpha1.TrafficTarget) runtime.Object {
		s := testSplit(traffic...)
		s.Name, s.UID = name, k8stypes.UID("uid-s-"+name)
		return s
	}
	var thaw []runtime.Object
	for _, o := range []runtime.Object{splitTestRevision("v1"), splitTestRevision("v2")} {
		thaw = append(thaw, toUnstructured(t, o, v1alpha1.RevisionKind))
	}
	for _, o := range []runtime.Object{
		split("good", tt("v1", 90, ""), tt("v2", 10, "canary")),
		split("missing", tt("v1", 90, ""), tt("ghost", 10, "")),
		split("hpa", tt("v1", 50, ""), tt("v2", 0, ""), tt("v3", 50, "")),
		split("bad", tt("v1", 80, ""), tt("v2", 10, "")), // admission would refuse it
	} {
		thaw = append(thaw, toUnstructured(t, o, v1alpha1.RevisionSplitKind))
	}
	thaw = append(thaw, toUnstructured(t, splitTestRevision("v3"), v1alpha1.RevisionKind))
	hpaObj := &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: "v3-hpa"},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{MaxReplicas: 3,
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "v3"}},
	}
	se := newSplitEnv(t, false, thaw, deployment("v1", 1, nil), deployment("v2", 1, nil), deployment("v3", 1, nil), hpaObj)

	good := se.ready(t, "good", v1alpha1.ReasonResolved)
	if good.ObservedGeneration != 3 || len(good.Traffic) != 2 || good.Traffic[1].Tag != "canary" || good.Traffic[1].Reason != v1alpha1.ReasonRouted {
		t.Errorf("good: %+v, want generation 3 and both entries Routed", good)
	}
	missing := se.ready(t, "missing", v1alpha1.ReasonRevisionNotFound)
	if c := meta.FindStatusCondition(missing.Conditions, v1alpha1.ConditionReady); !strings.Contains(c.Message, "ghost") || c.Status != metav1.ConditionFalse {
		t.Errorf("missing: Ready %+v, want False naming ghost", c)
	}
	hpa := se.ready(t, "hpa", v1alpha1.ReasonOtherAutoscaler)
	if c := meta.FindStatusCondition(hpa.Conditions, v1alpha1.ConditionReady); !strings.Contains(c.Message, "v3-hpa") {
		t.Errorf("hpa: Ready message %q does not name the HPA", c.Message)
	}
	if hpa.Traffic[2].Reason != v1alpha1.ReasonOtherAutoscaler || hpa.Traffic[1].Reason != v1alpha1.ReasonRouted {
		t.Errorf("hpa traffic %+v", hpa.Traffic)
	}
	se.ready(t, "bad", v1alpha1.ReasonInvalidSplit)
	se.events(t, "Warning RevisionNotFound", "Warning ScaledByOtherAutoscaler", "Warning InvalidSplit")

	// Nothing changed: reconciling again writes nothing.
	n := se.statusPatches.Load()
	for _, name := range []string{"good", "missing", "hpa", "bad"} {
		if err := se.p.reconcileSplit(se.ctx, key(name)); err != nil {
			t.Fatal(err)
		}
	}
	if got := se.statusPatches.Load(); got != n {
		t.Errorf("%d status writes without a change", got-n)
	}
	if n != 4 {
		t.Errorf("%d status writes for 4 splits, want 4", n)
	}

	if err := se.client.AutoscalingV2().HorizontalPodAutoscalers(testNS).Delete(se.ctx, "v3-hpa", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	se.ready(t, "hpa", v1alpha1.ReasonResolved)
	se.events(t, "Normal Resolved")
	for reason, want := range map[string]float64{v1alpha1.ReasonResolved: 2, v1alpha1.ReasonRevisionNotFound: 1,
		v1alpha1.ReasonOtherAutoscaler: 0, v1alpha1.ReasonInvalidSplit: 1} {
		if got := testutil.ToFloat64(se.p.metrics.splits.WithLabelValues(reason)); got != want {
			t.Errorf("%s{reason=%q} = %v, want %v", MetricSplits, reason, got, want)
		}
	}
}
