package control

import "github.com/thaw-dev/thaw/revision"

// Recommendation is what mode control needs from one decider result.
type Recommendation struct {
	// Valid is false when the decider had no data.
	Valid bool
	// Wanted is the replica count the decider wants before the scale-to-zero
	// gate holds it back (0 means "the revision is idle").
	Wanted int32
	// ExcessBurstCapacity is the decider's EBC in requests; negative keeps
	// the activator in the path.
	ExcessBurstCapacity int32
}

// ChooseMode returns where Envoy should send a revision's traffic, following
// Knative's PodAutoscaler rules:
//   - proxy when no backend is ready (requests must be held), or when the
//     target burst capacity is -1 (activator always in the path);
//   - with no decision yet (thaw just restarted), serve when backends are
//     ready so warm traffic keeps flowing straight to pods;
//   - proxy when a valid decision wants 0 replicas (first step of scale to
//     zero), or when the excess burst capacity is negative (an invalid,
//     no-data decision carries the last valid EBC, or the initial one);
//   - serve otherwise.
func ChooseMode(spec *revision.Spec, readyBackends int, rec *Recommendation) revision.Mode {
	switch {
	case readyBackends == 0, spec.TargetBurstCapacity == -1:
		return revision.ModeProxy
	case rec == nil:
		return revision.ModeServe
	case rec.Valid && rec.Wanted == 0, rec.ExcessBurstCapacity < 0:
		return revision.ModeProxy
	default:
		return revision.ModeServe
	}
}
