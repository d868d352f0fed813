package kube

import (
	corev1 "k8s.io/api/core/v1"

	"go.uber.org/zap"

	"github.com/thaw-dev/thaw/revision"
)

// ReasonWakeFailed is the reason of the Warning Event recorded when waking
// a revision clearly failed (see wakeFailureFor).
const ReasonWakeFailed = "WakeFailed"

// wakeFailureFor returns why waking a revision clearly failed, judged from
// its pods while none of them is a backend (ready == 0): a container
// waiting in CrashLoopBackOff, ImagePullBackOff or ErrImagePull, or a pod
// the scheduler marked Unschedulable. Terminating pods do not count. Of
// several failing pods the one first by name is reported, so the message
// is stable. nil when a pod serves or none shows such a state. The retry
// time is unknown (the kubelet's back-off is not published).
func wakeFailureFor(pods []*corev1.Pod, ready int) *revision.WakeFailure {
	if ready > 0 {
		return nil
	}
	var best *corev1.Pod
	var out *revision.WakeFailure
	for _, p := range pods {
		if p.DeletionTimestamp != nil || (best != nil && p.Name >= best.Name) {
			continue
		}
		if f := podWakeFailure(p); f != nil {
			best, out = p, f
		}
	}
	return out
}

// podWakeFailure returns the failure one pod shows, or nil.
func podWakeFailure(p *corev1.Pod) *revision.WakeFailure {
	for _, cs := range p.Status.ContainerStatuses {
		w := cs.State.Waiting
		if w == nil {
			continue
		}
		switch w.Reason {
		case revision.WakeCrashLoopBackOff, revision.WakeImagePullBackOff, revision.WakeErrImagePull:
			msg := "pod " + p.Name + " container " + cs.Name
			if w.Message != "" {
				msg += ": " + w.Message
			}
			return &revision.WakeFailure{Reason: w.Reason, Message: msg}
		}
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			msg := "pod " + p.Name
			if c.Message != "" {
				msg += ": " + c.Message
			}
			return &revision.WakeFailure{Reason: revision.WakeUnschedulable, Message: msg}
		}
	}
	return nil
}

// setWakeFailure publishes f (nil clears) for key and, while leading,
// records a Warning Event once per failure and leadership term.
func (p *Platform) setWakeFailure(key revision.Key, st *trackedTarget, f *revision.WakeFailure) {
	p.opts.Registry.SetWakeFailure(key, f)
	p.mu.Lock()
	var report bool
	switch {
	case f == nil:
		st.reportedWake = ""
	case p.Leading() && st.reportedWake != f.String():
		st.reportedWake, report = f.String(), true
	}
	ref := st.ref
	p.mu.Unlock()
	if !report {
		return
	}
	st.log.Warn("wake-up failed; held and new requests are answered 503 until the next attempt",
		zap.String("reason", f.Reason), zap.String("message", f.Message))
	if ref != nil {
		p.recorder.Eventf(ref, corev1.EventTypeWarning, ReasonWakeFailed,
			"waking failed: %s; held and new requests are answered 503 until a pod starts again", f.String())
	}
}
