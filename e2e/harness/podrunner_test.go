package harness

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestSetPodReady(t *testing.T) {
	now := metav1.Unix(100, 0)
	before := metav1.Unix(50, 0)
	tests := []struct {
		name        string
		status      corev1.PodStatus
		wantChanged bool
		want        corev1.PodStatus
	}{
		{
			name: "not ready becomes ready",
			status: corev1.PodStatus{
				Conditions: []corev1.PodCondition{
					{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: before},
					{Type: corev1.ContainersReady, Status: corev1.ConditionFalse, LastTransitionTime: before},
					{Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: before},
				},
				ContainerStatuses: []corev1.ContainerStatus{{Name: "app", Ready: false}},
			},
			wantChanged: true,
			want: corev1.PodStatus{
				Conditions: []corev1.PodCondition{
					{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: before},
					{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
					{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
				},
				ContainerStatuses: []corev1.ContainerStatus{{Name: "app", Ready: true}},
			},
		},
		{
			name:        "missing conditions are added",
			status:      corev1.PodStatus{},
			wantChanged: true,
			want: corev1.PodStatus{Conditions: []corev1.PodCondition{
				{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
				{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
			}},
		},
		{
			name: "already ready is left alone",
			status: corev1.PodStatus{
				Conditions: []corev1.PodCondition{
					{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: before},
					{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: before},
				},
				ContainerStatuses: []corev1.ContainerStatus{{Name: "app", Ready: true}},
			},
			want: corev1.PodStatus{
				Conditions: []corev1.PodCondition{
					{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: before},
					{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: before},
				},
				ContainerStatuses: []corev1.ContainerStatus{{Name: "app", Ready: true}},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := &corev1.Pod{Status: tt.status}
			if got := setPodReady(pod, now); got != tt.wantChanged {
				t.Errorf("setPodReady() = %v, want %v", got, tt.wantChanged)
			}
			if diff := cmp.Diff(tt.want, pod.Status); diff != "" {
				t.Errorf("status (-want +got):\n%s", diff)
			}
		})
	}
}

func TestServable(t *testing.T) {
	running := func(ip string) *corev1.Pod {
		return &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip}}
	}
	deleting := running("127.8.0.5")
	deleting.DeletionTimestamp = &metav1.Time{}
	tests := []struct {
		name string
		pod  *corev1.Pod
		want bool
	}{
		{name: "running loopback", pod: running("127.8.0.5"), want: true},
		{name: "no ip", pod: running(""), want: false},
		{name: "non-loopback ip is never served", pod: running("10.0.0.5"), want: false},
		{name: "pending", pod: &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodPending, PodIP: "127.8.0.5"}}, want: false},
		{name: "terminating", pod: deleting, want: false},
	}
	for _, tt := range tests {
		if got := servable(tt.pod); got != tt.want {
			t.Errorf("%s: servable() = %v, want %v", tt.name, got, tt.want)
		}
	}
}
