package control

import "github.com/thaw-dev/thaw/revision"

// Recommendation is what mode control needs from one decider result.
type Recommendation struct {
	// Valid is false when the decider had no data.
	Valid bool
	// WantZero is true when the decider found the revision idle for its
	// stable window and wants it at zero (autoscaler.Decision.WantZero).
	// A recommendation of 0 pods without it (waking, or idle for less than
	// the stable window) does not count.
	WantZero bool
	// ExcessBurstCapacity is the decider's EBC in requests; negative keeps
	// the activator in the path.
	ExcessBurstCapacity int32
}

// ChooseMode returns where Envoy should send a revision's traffic, following
// Knative's PodAutoscaler rules with one deliberate difference:
//   - proxy when no backend is ready (requests must be held), or when the
//     target burst capacity is -1 (activator always in the path);
//   - with no decision yet (thaw just restarted), serve when backends are
//     ready so warm traffic keeps flowing straight to pods;
//   - proxy when the decider wants the revision at zero (first step of
//     scale to zero);
//   - proxy when the excess burst capacity is negative (an invalid, no-data
//     decision carries the last valid EBC, or the initial one) and the
//     container concurrency is above 0: the activator then enforces the
//     per-backend limit;
//   - serve otherwise. In particular a revision with container concurrency 0
//     (unlimited) and ready backends serves whatever its EBC: with no
//     per-backend limit the activator would only forward requests, at the
//     cost of an ext_proc round trip each (Knative keeps it in the path
//     there; see docs/activator.md).
func ChooseMode(spec *revision.Spec, readyBackends int, rec *Recommendation) revision.Mode {
	switch {
	case readyBackends == 0, spec.TargetBurstCapacity == -1:
		return revision.ModeProxy
	case rec == nil:
		return revision.ModeServe
	case rec.WantZero:
		return revision.ModeProxy
	case rec.ExcessBurstCapacity < 0 && spec.ContainerConcurrency > 0:
		return revision.ModeProxy
	default:
		return revision.ModeServe
	}
}
