package kube

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/thaw-dev/thaw/revision"
)

func TestTransformPod(t *testing.T) {
	now := metav1.Now()
	in := pod("p1", "hello", "127.8.0.5", true)
	in.ResourceVersion = "42"
	in.UID = "u1"
	in.DeletionTimestamp = &now
	in.Annotations = map[string]string{"big": "annotation"}
	in.OwnerReferences = []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "hello-1", UID: "rs"}}
	in.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubelet"}}
	in.Spec.NodeName = "node-1"
	in.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "A", Value: "b"}}
	in.Spec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
	in.Spec.Containers = append(in.Spec.Containers, corev1.Container{Name: "noports", Image: "x"})
	in.Status.Conditions = append(in.Status.Conditions, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue})
	in.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", Ready: true},
		{Name: "side", Image: "x", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: "back-off"}}}}

	out, err := transform(in)
	if err != nil {
		t.Fatal(err)
	}
	want := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "p1", Namespace: testNS, UID: "u1", ResourceVersion: "42", DeletionTimestamp: &now,
			Labels: in.Labels, OwnerReferences: in.OwnerReferences,
		},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Ports: in.Spec.Containers[0].Ports}}},
		Status: corev1.PodStatus{
			PodIP:      "127.8.0.5",
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "side",
				State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: "back-off"}}}},
		},
	}
	if diff := cmp.Diff(want, out); diff != "" {
		t.Errorf("transformed pod (-want +got):\n%s", diff)
	}
	again, _ := transform(out)
	if diff := cmp.Diff(out, again); diff != "" {
		t.Errorf("transform not idempotent (-first +second):\n%s", diff)
	}
}

func TestTransformWorkloads(t *testing.T) {
	ann := map[string]string{
		AnnotationHosts:                          "a",
		AnnotationStatus:                         `{"mode":"proxy"}`,
		revision.ThawPrefix + revision.KeyTarget: "5",
		revision.KnativePrefix + "minScale":      "1",
		"kubectl.kubernetes.io/last-applied":     "{huge}",
	}
	d := deployment("a", 3, ann)
	d.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "A", Value: "b"}}
	d.Status.ReadyReplicas = 3
	out, _ := transform(d)
	got := out.(*appsv1.Deployment)
	wantAnn := map[string]string{
		AnnotationHosts: "a", AnnotationStatus: `{"mode":"proxy"}`,
		revision.ThawPrefix + revision.KeyTarget: "5", revision.KnativePrefix + "minScale": "1",
	}
	if diff := cmp.Diff(wantAnn, got.Annotations); diff != "" {
		t.Errorf("annotations (-want +got):\n%s", diff)
	}
	if *got.Spec.Replicas != 3 || got.Spec.Selector == nil || len(got.Spec.Template.Spec.Containers) != 1 ||
		got.Spec.Template.Spec.Containers[0].Env != nil || got.Spec.Template.Spec.Containers[0].Ports[0].ContainerPort != 8080 {
		t.Errorf("deployment spec not kept as needed: %+v", got.Spec)
	}
	if got.Status.ReadyReplicas != 0 {
		t.Errorf("status kept: %+v", got.Status)
	}

	plain := deployment("b", 3, map[string]string{"other": "x"})
	out, _ = transform(plain)
	if g := out.(*appsv1.Deployment); g.Annotations != nil || g.Spec.Replicas != nil || g.Name != "b" || g.Namespace != testNS {
		t.Errorf("unannotated deployment kept more than identity: %+v", g)
	}

	s := statefulSet("c", 2, map[string]string{AnnotationHosts: "c"})
	out, _ = transform(s)
	if g := out.(*appsv1.StatefulSet); *g.Spec.Replicas != 2 || g.Spec.Selector == nil || g.Annotations[AnnotationHosts] != "c" {
		t.Errorf("statefulset: %+v", g)
	}

	tomb := cache.DeletedFinalStateUnknown{Key: "apps/x", Obj: d}
	if out, _ := transform(tomb); out != any(tomb) {
		t.Errorf("tombstone changed: %#v", out)
	}
}

func TestBackendsFor(t *testing.T) {
	now := metav1.Now()
	terminating := pod("term", "a", "127.8.0.3", true)
	terminating.DeletionTimestamp = &now
	noCond := pod("nocond", "a", "127.8.0.4", true)
	noCond.Status.Conditions = nil
	noPorts := pod("noports", "a", "127.8.0.6", true)
	noPorts.Spec.Containers[0].Ports = nil
	pods := []*corev1.Pod{
		pod("ready", "a", "127.8.0.2", true),
		pod("notready", "a", "127.8.0.1", false),
		terminating,
		noCond,
		pod("noip", "a", "", true),
		pod("badip", "a", "pod.example", true),
		noPorts,
		pod("ready6", "a", "fd00::1", true),
	}
	got := backendsFor(pods, 0)
	want := []revision.Backend{
		{Address: "127.8.0.2", Port: 8080, Ready: true},
		{Address: "fd00::1", Port: 8080, Ready: true},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("per-pod ports (-want +got):\n%s", diff)
	}
	got = backendsFor(pods, 9000)
	if len(got) != 3 || got[0].Port != 9000 {
		t.Errorf("fixed port: %+v, want 3 backends on 9000 (pods without ports included)", got)
	}
}

func TestPodOwner(t *testing.T) {
	rs := func(name string) []metav1.OwnerReference {
		return []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: name, Controller: new(true)}}
	}
	tests := []struct {
		name   string
		owners []metav1.OwnerReference
		hash   string
		want   string
	}{
		{"deployment pod", rs("web-api-5d8f9c"), "5d8f9c", "Deployment/apps/web-api"},
		{"replicaset without the hash label", rs("web-5d8f9c"), "", ""},
		{"bare replicaset", rs("web"), "5d8f9c", ""},
		{"statefulset pod", []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "db", Controller: new(true)}}, "", "StatefulSet/apps/db"},
		{"not the controller", []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "db"}}, "", ""},
		{"job pod", []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "j", Controller: new(true)}}, "", ""},
		{"bare pod", nil, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := pod("p", "web", "127.8.0.1", true)
			p.OwnerReferences = tt.owners
			delete(p.Labels, appsv1.DefaultDeploymentUniqueLabelKey)
			if tt.hash != "" {
				p.Labels[appsv1.DefaultDeploymentUniqueLabelKey] = tt.hash
			}
			got, _ := indexByOwner(p)
			if (len(got) == 0 && tt.want != "") || (len(got) > 0 && got[0] != tt.want) {
				t.Errorf("owner index %v, want %q", got, tt.want)
			}
		})
	}
}
