package kube

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	scalefake "k8s.io/client-go/scale/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"

	"github.com/thaw-dev/thaw/revision"
)

const testNS = "apps"

func labelsFor(name string) map[string]string { return map[string]string{"app": name} }

// deployment returns a Deployment selecting app=<name> with one container
// port 8080 and the given annotations.
func deployment(name string, replicas int32, annotations map[string]string) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNS, Annotations: annotations, UID: types.UID("uid-d-" + name)},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labelsFor(name)},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labelsFor(name)},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "app", Image: "hello", Ports: []corev1.ContainerPort{{ContainerPort: 8080}},
				}}},
			},
		},
	}
}

func statefulSet(name string, replicas int32, annotations map[string]string) *appsv1.StatefulSet {
	d := deployment(name, replicas, annotations)
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNS, Annotations: annotations, UID: types.UID("uid-s-" + name)},
		Spec:       appsv1.StatefulSetSpec{Replicas: d.Spec.Replicas, Selector: d.Spec.Selector, Template: d.Spec.Template},
	}
}

// pod returns a pod of Deployment <app> (owned by its ReplicaSet, labelled
// app=<app>) with an IP and the given readiness.
func pod(name, app, ip string, ready bool) *corev1.Pod {
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	labels := labelsFor(app)
	labels[appsv1.DefaultDeploymentUniqueLabelKey] = "5d8f9c"
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNS, Labels: labels,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: app + "-5d8f9c",
				UID: types.UID("rs-" + app), Controller: ptr.To(true)}}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "app", Image: "hello", Ports: []corev1.ContainerPort{{ContainerPort: 8080}},
		}}},
		Status: corev1.PodStatus{
			Phase: corev1.PodRunning, PodIP: ip,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: status}},
		},
	}
}

func hosts(h string, extra ...string) map[string]string {
	m := map[string]string{AnnotationHosts: h}
	for i := 0; i+1 < len(extra); i += 2 {
		m[extra[i]] = extra[i+1]
	}
	return m
}

// testEnv is a Platform running on a fake clientset.
type testEnv struct {
	p        *Platform
	reg      *revision.Registry
	client   *fake.Clientset
	scales   *scalefake.FakeScaleClient
	recorder *record.FakeRecorder
	ctx      context.Context

	mu      sync.Mutex
	patches []int32
}

func newEnv(t *testing.T, mutate func(*Options), objs ...runtime.Object) *testEnv {
	t.Helper()
	env := &testEnv{
		reg:      revision.NewRegistry(revision.RegistryOptions{}),
		client:   fake.NewClientset(objs...),
		scales:   &scalefake.FakeScaleClient{},
		recorder: record.NewFakeRecorder(100),
	}
	env.scales.AddReactor("patch", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		pa := a.(k8stesting.PatchAction)
		var body struct {
			Spec struct{ Replicas int32 } `json:"spec"`
		}
		if err := json.Unmarshal(pa.GetPatch(), &body); err != nil {
			return true, nil, err
		}
		env.mu.Lock()
		env.patches = append(env.patches, body.Spec.Replicas)
		env.mu.Unlock()
		return true, &autoscalingv1.Scale{
			ObjectMeta: metav1.ObjectMeta{Name: pa.GetName(), Namespace: pa.GetNamespace(), ResourceVersion: "999999"},
			Spec:       autoscalingv1.ScaleSpec{Replicas: body.Spec.Replicas},
		}, nil
	})
	opts := Options{
		Client: env.client, Scales: env.scales, Registry: env.reg, Recorder: env.recorder,
		StatusInterval: -1,
	}
	if mutate != nil {
		mutate(&opts)
	}
	p, err := New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	env.p = p
	ctx, cancel := context.WithCancel(t.Context())
	env.ctx = ctx
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return env
}

// waitFor waits (at most 30s, a deadlock guard, not a timing assertion)
// for the registry to satisfy cond.
func (e *testEnv) waitFor(t *testing.T, what string, cond func(*revision.Snapshot) bool) *revision.Snapshot {
	t.Helper()
	ctx, cancel := context.WithTimeout(e.ctx, 30*time.Second)
	defer cancel()
	s, err := e.reg.WaitFor(ctx, cond)
	if err != nil {
		snap := e.reg.Snapshot()
		t.Fatalf("waiting for %s: %v; last snapshot: synced=%v revisions=%v invalid=%v", what, err, snap.Synced, keys(snap.Revisions), snap.Invalid)
	}
	return s
}

func keys(m revision.RevisionMap) []string {
	out := make([]string, 0, m.Len())
	for k := range m.All() {
		out = append(out, k.String())
	}
	slices.Sort(out)
	return out
}

// event waits for the next Event of the fake recorder.
func (e *testEnv) event(t *testing.T) string {
	t.Helper()
	select {
	case ev := <-e.recorder.Events:
		return ev
	case <-time.After(30 * time.Second):
		t.Fatal("no Event recorded")
		return ""
	}
}

// noEvent reports any Event already queued.
func (e *testEnv) noEvent(t *testing.T) {
	t.Helper()
	select {
	case ev := <-e.recorder.Events:
		t.Fatalf("unexpected Event %q", ev)
	default:
	}
}

func key(name string) revision.Key { return revision.Key{Namespace: testNS, Name: name} }
