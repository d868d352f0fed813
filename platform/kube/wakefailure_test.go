package kube

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/thaw-dev/thaw/revision"
)

func TestWakeFailureFor(t *testing.T) {
	waiting := func(name, reason string) *corev1.Pod {
		p := pod(name, "hello", "", false)
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app",
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: "msg of " + name}}}}
		return p
	}
	unschedulable := pod("u", "hello", "", false)
	unschedulable.Status.Conditions = append(unschedulable.Status.Conditions, corev1.PodCondition{Type: corev1.PodScheduled,
		Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, Message: "0/1 nodes are available"})
	now := metav1.Now()
	terminating := waiting("a-old", "CrashLoopBackOff")
	terminating.DeletionTimestamp = &now
	tests := []struct {
		name  string
		pods  []*corev1.Pod
		ready int
		want  *revision.WakeFailure
	}{
		{"no pods", nil, 0, nil},
		{"starting", []*corev1.Pod{waiting("p", "ContainerCreating")}, 0, nil},
		{"image pull back-off", []*corev1.Pod{waiting("p", "ImagePullBackOff")}, 0,
			&revision.WakeFailure{Reason: "ImagePullBackOff", Message: "pod p container app: msg of p"}},
		{"err image pull", []*corev1.Pod{waiting("p", "ErrImagePull")}, 0,
			&revision.WakeFailure{Reason: "ErrImagePull", Message: "pod p container app: msg of p"}},
		{"first failing pod by name", []*corev1.Pod{waiting("z", "CrashLoopBackOff"), waiting("b", "ImagePullBackOff"), waiting("a", "ContainerCreating")}, 0,
			&revision.WakeFailure{Reason: "ImagePullBackOff", Message: "pod b container app: msg of b"}},
		{"terminating pods do not count", []*corev1.Pod{terminating}, 0, nil},
		{"unschedulable", []*corev1.Pod{unschedulable}, 0,
			&revision.WakeFailure{Reason: "Unschedulable", Message: "pod u: 0/1 nodes are available"}},
		{"a ready backend", []*corev1.Pod{waiting("p", "CrashLoopBackOff")}, 1, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, wakeFailureFor(tt.pods, tt.ready)); diff != "" {
				t.Errorf("wakeFailureFor (-want +got):\n%s", diff)
			}
		})
	}
}

// TestWakeFailurePublishedAndReported: a pod in CrashLoopBackOff with no
// ready pod sets the revision's WakeFailure and one Warning Event; the pod
// becoming ready clears it.
func TestWakeFailurePublishedAndReported(t *testing.T) {
	crashing := pod("crash-1", "crash", "127.8.0.1", false)
	crashing.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app",
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off 10s"}}}}
	env := newEnv(t, nil, deployment("crash", 1, hosts("crash")), crashing)
	snap := env.waitFor(t, "wake failure", func(s *revision.Snapshot) bool {
		r := s.Get(key("crash"))
		return r != nil && r.WakeFailure != nil
	})
	want := &revision.WakeFailure{Reason: "CrashLoopBackOff", Message: "pod crash-1 container app: back-off 10s"}
	if diff := cmp.Diff(want, snap.Get(key("crash")).WakeFailure); diff != "" {
		t.Fatalf("WakeFailure (-want +got):\n%s", diff)
	}
	ev := env.event(t)
	for _, w := range []string{"Warning", ReasonWakeFailed, "CrashLoopBackOff", "back-off 10s"} {
		if !strings.Contains(ev, w) {
			t.Errorf("event %q does not contain %q", ev, w)
		}
	}
	if _, err := env.client.CoreV1().Pods(testNS).UpdateStatus(env.ctx, pod("crash-1", "crash", "127.8.0.1", true), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	env.waitFor(t, "wake failure cleared by a ready pod", func(s *revision.Snapshot) bool {
		r := s.Get(key("crash"))
		return r != nil && r.WakeFailure == nil && len(r.Backends) == 1
	})
	env.noEvent(t)
}
