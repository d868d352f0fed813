package kube

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	scalefake "k8s.io/client-go/scale/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	"github.com/thaw-dev/thaw/revision"
)

// realisticPod is a pod as the apiserver returns it: managed fields, env,
// resources, volumes, several conditions and container statuses.
func realisticPod(i int) *corev1.Pod {
	p := pod(fmt.Sprintf("app-%d-abcde", i), fmt.Sprintf("app-%d", i/3), fmt.Sprintf("127.8.%d.%d", i/250, i%250), true)
	p.UID = "0b9d6c1e-6a39-4b8e-9e2f-3f3f0e9d1a11"
	p.ResourceVersion = "123456"
	p.Annotations = map[string]string{"kubectl.kubernetes.io/restartedAt": "2026-01-01T00:00:00Z"}
	p.ManagedFields = []metav1.ManagedFieldsEntry{
		{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1",
			FieldsV1: metav1.NewFieldsV1(strings.Repeat("x", 1500))},
		{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", Subresource: "status",
			FieldsV1: metav1.NewFieldsV1(strings.Repeat("x", 1200))},
	}
	c := &p.Spec.Containers[0]
	c.Image = "registry.example/team/app@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	c.Env = []corev1.EnvVar{{Name: "LOG_LEVEL", Value: "info"}, {Name: "PORT", Value: "8080"}, {Name: "REGION", Value: "eu-west-1"}}
	c.Resources = corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")},
	}
	c.ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/ready"}}}
	c.VolumeMounts = []corev1.VolumeMount{{Name: "kube-api-access-x", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true}}
	p.Spec.Volumes = []corev1.Volume{{Name: "kube-api-access-x", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{}}}}
	p.Spec.NodeName = "node-1"
	p.Spec.Tolerations = []corev1.Toleration{{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists}}
	p.Status.HostIP = "10.0.0.1"
	p.Status.PodIPs = []corev1.PodIP{{IP: p.Status.PodIP}}
	p.Status.Conditions = append(p.Status.Conditions,
		corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue},
		corev1.PodCondition{Type: corev1.ContainersReady, Status: corev1.ConditionTrue},
		corev1.PodCondition{Type: corev1.PodInitialized, Status: corev1.ConditionTrue})
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", Ready: true, Image: c.Image, ImageID: c.Image, ContainerID: "containerd://0123456789abcdef"}}
	return p
}

// TestTransformShrinksPods reports how much of a pod the informer cache
// keeps (protobuf size, the apiserver's wire form).
func TestTransformShrinksPods(t *testing.T) {
	full := realisticPod(1)
	fullSize := full.Size()
	slim, _ := transform(full)
	slimSize := slim.(*corev1.Pod).Size()
	t.Logf("pod protobuf size: full %d B, kept by the transform %d B (%.0f%%)", fullSize, slimSize, 100*float64(slimSize)/float64(fullSize))
	if slimSize*3 > fullSize {
		t.Errorf("transform keeps %d of %d bytes, want under a third", slimSize, fullSize)
	}
}

// BenchmarkReconcile measures one reconcile (cache lookups, parse, pod
// selection, registry update) with 1,000 revisions of 3 pods in one
// namespace: the cost of one pod event.
func BenchmarkReconcile(b *testing.B) {
	const revisions = 1000
	client := fake.NewClientset()
	f := informers.NewSharedInformerFactory(client, 0)
	dInf, sInf, pInf := f.Apps().V1().Deployments(), f.Apps().V1().StatefulSets(), f.Core().V1().Pods()
	if err := pInf.Informer().AddIndexers(cache.Indexers{ownerIndex: indexByOwner}); err != nil {
		b.Fatal(err)
	}
	for i := range revisions {
		d := deployment(fmt.Sprintf("app-%d", i), 3, hosts(fmt.Sprintf("app-%d.example.com", i)))
		slim, _ := transform(d)
		if err := dInf.Informer().GetIndexer().Add(slim); err != nil {
			b.Fatal(err)
		}
		for j := range 3 {
			pp, _ := transform(realisticPod(3*i + j))
			if err := pInf.Informer().GetIndexer().Add(pp); err != nil {
				b.Fatal(err)
			}
		}
	}
	reg := revision.NewRegistry(revision.RegistryOptions{Holdoff: 1e9})
	p, err := New(Options{Client: client, Scales: &scalefake.FakeScaleClient{}, Registry: reg})
	if err != nil {
		b.Fatal(err)
	}
	p.recorder = record.NewFakeRecorder(1)
	p.deployments, p.statefuls, p.pods = dInf.Lister(), sInf.Lister(), pInf.Informer().GetIndexer()
	p.queue = workqueue.NewTyped[revision.Key]()
	for i := range revisions {
		p.reconcile(b.Context(), key(fmt.Sprintf("app-%d", i)))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		p.reconcile(b.Context(), key(fmt.Sprintf("app-%d", i%revisions)))
	}
}
