package kube

import (
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
