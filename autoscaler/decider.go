package autoscaler

import (
	"math"
	"time"

	"github.com/thaw-dev/thaw/revision"
)

// minTargetPerPod keeps a misconfigured target from dividing by zero
// (requests, or requests per second, per pod).
const minTargetPerPod = 0.01

// Result is one KPA decision for a revision, before scale bounds and the
// scale-to-zero gate (see Gate).
type Result struct {
	// DesiredPodCount is the pods the KPA rules want (>= 0).
	DesiredPodCount int32
	// ExcessBurstCapacity is spare capacity beyond the target burst
	// capacity, in the metric's unit (requests, or requests per second):
	// floor(ready × target − TBC − panic value); 0 when TBC is 0 and −1 when
	// TBC is −1. Negative keeps the activator in the path.
	ExcessBurstCapacity int32
	// ScaleValid is false when there was no data (Err wraps ErrNoData);
	// the other fields are then zero and must not be applied.
	ScaleValid bool
	// InPanic reports panic mode after this decision.
	InPanic bool
	// StableValue and PanicValue are the observed window averages of the
	// spec's metric (concurrency or RPS).
	StableValue, PanicValue float64
	// Stats holds all four window averages.
	Stats WindowStats
	// ReadyPods is the ready pod count the decision used.
	ReadyPods int32
	// Err says why the result is invalid.
	Err error
}

// KPA is the state the KPA rules keep between decisions (panic mode, the
// largest pod count desired while panicking, the scale-down delay window).
// The zero value is ready to use; Step is not safe for concurrent use.
type KPA struct {
	panicSince   time.Time // last time over the threshold; zero when calm
	maxPanicPods int32
	delay        maxWindow
}

// InPanic reports whether the last Step left panic mode on.
func (k *KPA) InPanic() bool { return !k.panicSince.IsZero() }

// Step applies Knative's KPA rules to one observation:
//
//   - desired stable/panic pods = ceil(observed / (target × utilization)),
//     each clamped to [floor(ready / max-scale-down-rate),
//     ceil(max-scale-up-rate × ready)], where ready counts at least 1 and
//     the upper bound is at least ready+1 (growth of one pod is always
//     allowed);
//   - panic mode starts when ceil(panic / target)/ready ≥ the panic
//     threshold, is extended while that holds, and ends once it has not
//     held for a full stable window; while panicking the result is the
//     largest of the stable and panic counts and never decreases;
//   - with a scale-down delay, the result is the largest desired within
//     the delay;
//   - excess burst capacity = floor(ready × target − TBC − panic value)
//     (target without utilization, as Knative's "total" value).
func (k *KPA) Step(spec *revision.Spec, stats WindowStats, ready int32, now time.Time) Result {
	stable, panicV := stats.StableConcurrency, stats.PanicConcurrency
	if spec.Metric == revision.MetricRPS {
		stable, panicV = stats.StableRPS, stats.PanicRPS
	}
	target := max(spec.EffectiveTarget()*spec.TargetUtilizationPercentage/100, minTargetPerPod)
	lo, hi := RateBounds(ready, spec.MaxScaleUpRate, spec.MaxScaleDownRate)
	dspc := math.Ceil(stable / target)
	dppc := math.Ceil(panicV / target)
	desiredStable := clampPods(dspc, lo, hi)
	desiredPanic := clampPods(dppc, lo, hi)

	readyF := math.Max(1, float64(ready))
	over := dppc/readyF >= spec.PanicThresholdPercentage/100
	switch {
	case over:
		k.panicSince = now
	case !k.panicSince.IsZero() && k.panicSince.Add(spec.StableWindow).Before(now):
		k.panicSince, k.maxPanicPods = time.Time{}, 0
	}

	desired := desiredStable
	if k.InPanic() {
		desired = max(desired, desiredPanic, k.maxPanicPods)
		k.maxPanicPods = desired
	}
	desired = k.delay.Record(now, desired, spec.ScaleDownDelay)

	return Result{
		DesiredPodCount:     desired,
		ExcessBurstCapacity: ExcessBurstCapacity(ready, spec.EffectiveTarget(), spec.TargetBurstCapacity, panicV),
		ScaleValid:          true,
		InPanic:             k.InPanic(),
		StableValue:         stable,
		PanicValue:          panicV,
		Stats:               stats,
		ReadyPods:           ready,
	}
}

// RateBounds returns the pod counts one decision may move between, from
// ready pods (0 counts as 1): [floor(ready / downRate), ceil(upRate ×
// ready)], the upper bound at least ready+1. A rate ≤ 1 disables its
// bound.
func RateBounds(ready int32, upRate, downRate float64) (lo, hi float64) {
	r := math.Max(1, float64(ready))
	hi = math.Inf(1)
	if upRate > 1 {
		hi = math.Max(math.Ceil(upRate*r), r+1)
	}
	if downRate > 1 {
		lo = math.Floor(r / downRate)
	}
	return lo, hi
}

// ExcessBurstCapacity returns floor(ready × perPod − tbc − panicValue) for
// tbc > 0, 0 for tbc == 0 and −1 for tbc < 0 (activator always in the
// path), clamped to int32. perPod is the per-pod target without
// utilization, panicValue the panic-window average, both in the metric's
// unit.
func ExcessBurstCapacity(ready int32, perPod, tbc, panicValue float64) int32 {
	switch {
	case tbc == 0:
		return 0
	case tbc < 0:
		return -1
	}
	return clampInt32(math.Floor(float64(ready)*perPod - tbc - panicValue))
}

func clampPods(v, lo, hi float64) int32 {
	return clampInt32(math.Min(math.Max(v, lo), hi))
}

func clampInt32(v float64) int32 {
	switch {
	case math.IsNaN(v):
		return 0
	case v >= math.MaxInt32:
		return math.MaxInt32
	case v <= math.MinInt32:
		return math.MinInt32
	}
	return int32(v)
}
