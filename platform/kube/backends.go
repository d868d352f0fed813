package kube

import (
	"net/netip"

	corev1 "k8s.io/api/core/v1"

	"github.com/thaw-dev/thaw/revision"
)

// podServes reports whether a pod can take traffic: its Ready condition is
// True, it is not terminating (no deletionTimestamp) and it has a valid IP.
// A terminating pod leaves the backend set at once, before its containers
// stop, so Envoy drains it while it still answers.
func podServes(p *corev1.Pod) bool {
	if p.DeletionTimestamp != nil || p.Status.PodIP == "" {
		return false
	}
	if _, err := netip.ParseAddr(p.Status.PodIP); err != nil {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// backendsFor returns the backends of a revision from its selected pods:
// one per serving pod (see podServes), at port, or at the pod's first
// container port when port is 0. Pods without any port are skipped. The
// result is sorted by the registry; every backend is Ready.
func backendsFor(pods []*corev1.Pod, port int32) []revision.Backend {
	out := make([]revision.Backend, 0, len(pods))
	for _, p := range pods {
		if !podServes(p) {
			continue
		}
		pp := port
		if pp == 0 {
			pp = firstContainerPort(&p.Spec)
		}
		if pp == 0 {
			continue
		}
		out = append(out, revision.Backend{Address: p.Status.PodIP, Port: pp, Ready: true})
	}
	return out
}
