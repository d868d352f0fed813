package kube

import (
	"encoding/json"
	"slices"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	scalefake "k8s.io/client-go/scale/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/thaw-dev/thaw/revision"
)

func withCost(p *corev1.Pod, cost string) *corev1.Pod {
	p.Annotations = map[string]string{AnnotationPodDeletionCost: cost}
	return p
}

func TestPlanDeletionCosts(t *testing.T) {
	pods := func() []*corev1.Pod {
		return []*corev1.Pod{
			pod("a", "web", "127.8.0.1", true),
			pod("b", "web", "127.8.0.2", true),
			withCost(pod("c", "web", "127.8.0.3", true), "4"),
			pod("d", "web", "127.8.0.4", false), // not ready: left alone
		}
	}
	tests := []struct {
		name  string
		pods  []*corev1.Pod
		load  map[string]int
		limit int
		want  []costPatch
	}{
		{"nobody busy, no annotation", pods()[:2], nil, 10, nil},
		{"busy pods get their load, busiest first, stale cost reset",
			pods(), map[string]int{"127.8.0.2:8080": 2, "127.8.0.4:8080": 9, "127.8.0.1:8080": 5}, 10,
			[]costPatch{{"a", 5}, {"b", 2}, {"c", 0}}},
		{"unchanged cost not patched", pods(), map[string]int{"127.8.0.3:8080": 4}, 10, nil},
		{"bounded", pods(), map[string]int{"127.8.0.1:8080": 1, "127.8.0.2:8080": 3}, 2,
			[]costPatch{{"b", 3}, {"a", 1}}},
		{"capped", pods()[:1], map[string]int{"127.8.0.1:8080": 1 << 30}, 10, []costPatch{{"a", maxDeletionCost}}},
		{"garbage annotation fixed", []*corev1.Pod{withCost(pod("x", "web", "127.8.0.9", true), "lots")}, nil, 10,
			[]costPatch{{"x", 0}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := planDeletionCosts(tt.pods, 0, tt.load, tt.limit)
			if !slices.Equal(got, tt.want) {
				t.Errorf("plan %v, want %v", got, tt.want)
			}
		})
	}
}

// loadMap is a LoadSource answering a fixed map.
type loadMap map[string]int

func (l loadMap) BackendInFlight(revision.Key) map[string]int { return l }

// TestScaleDownSetsDeletionCostsFirst: before the /scale patch of a
// scale-down, the busy pod gets a cost above the idle ones; a scale-up
// patches no pod.
func TestScaleDownSetsDeletionCostsFirst(t *testing.T) {
	var mu sync.Mutex
	var order []string
	// Reactors are added before Run: the fake's reactor chain is not safe
	// to change concurrently.
	mutate := func(o *Options) {
		o.Load = loadMap{"127.8.0.2:8080": 3}
		o.Client.(*fake.Clientset).PrependReactor("patch", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
			pa := a.(k8stesting.PatchAction)
			var body struct {
				Metadata struct{ Annotations map[string]string } `json:"metadata"`
			}
			if err := json.Unmarshal(pa.GetPatch(), &body); err != nil {
				t.Errorf("pod patch %s: %v", pa.GetPatch(), err)
			}
			mu.Lock()
			order = append(order, "pod "+pa.GetName()+"="+body.Metadata.Annotations[AnnotationPodDeletionCost])
			mu.Unlock()
			return false, nil, nil
		})
		o.Scales.(*scalefake.FakeScaleClient).PrependReactor("patch", "*", func(k8stesting.Action) (bool, runtime.Object, error) {
			mu.Lock()
			order = append(order, "scale")
			mu.Unlock()
			return false, nil, nil
		})
	}
	env := newEnv(t, mutate,
		deployment("web", 3, hosts("web")),
		pod("web-1", "web", "127.8.0.1", true),
		pod("web-2", "web", "127.8.0.2", true),
		pod("web-3", "web", "127.8.0.3", true),
	)
	env.waitFor(t, "3 backends", func(s *revision.Snapshot) bool {
		r := s.Get(key("web"))
		return r != nil && len(r.Backends) == 3
	})
	if err := env.p.SetScale(env.ctx, key("web"), 4); err != nil {
		t.Fatal(err)
	}
	if err := env.p.SetScale(env.ctx, key("web"), 2); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"scale", "pod web-2=3", "scale"}; !slices.Equal(order, want) {
		t.Errorf("API writes %v, want %v", order, want)
	}
	got, err := env.client.CoreV1().Pods(testNS).Get(env.ctx, "web-2", metav1.GetOptions{})
	if err != nil || got.Annotations[AnnotationPodDeletionCost] != "3" {
		t.Errorf("web-2 annotations %v, %v; want cost 3", got.GetAnnotations(), err)
	}
}
