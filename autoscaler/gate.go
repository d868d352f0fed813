package autoscaler

import (
	"time"

	"github.com/thaw-dev/thaw/revision"
)

// Reasons a Gate output's Desired differs from its Recommended, or why a
// revision is held at a scale; shown by `thaw status`.
const (
	ReasonActiveWindow      = "active within the stable window"
	ReasonActivating        = "activating: waiting for a ready pod"
	ReasonProxyUnconfirmed  = "waiting for every Envoy to confirm proxy mode"
	ReasonGracePeriod       = "in proxy mode for less than the scale-to-zero grace period"
	ReasonPodRetention      = "within the scale-to-zero pod retention period"
	ReasonActivationTimeout = "activation timed out without a ready pod"
	ReasonActivationFailed  = "last activation timed out: waiting for a new request"
)

// GateInput is what the scaler stage sees at one decision.
type GateInput struct {
	Now  time.Time
	Spec *revision.Spec
	// Result is the decider's; an invalid one leaves the current scale,
	// only brought within bounds.
	Result Result
	// Current and Ready come from ScaleTarget.GetScale (replicas).
	Current, Ready int32
	// Poked is true when a request arrived while the revision was at zero:
	// evidence of at least one request even before its sample arrives.
	Poked bool
	// EnableScaleToZero is the global switch; false makes 1 the minimum.
	EnableScaleToZero bool
	// ProxyConfirmed and ProxySince come from ModeConfirmer.
	ProxyConfirmed bool
	ProxySince     time.Time
}

// GateOutput is the scaler stage's verdict.
type GateOutput struct {
	// Recommended is the decider's pod count within the scale bounds
	// (min/max, initial scale until reached, activation scale as the
	// lowest non-zero scale), before the scale-to-zero gate. For an invalid
	// decider result it is the current scale within bounds.
	Recommended int32
	// Desired is the scale to apply (replicas).
	Desired int32
	// WantZero is true when the revision is idle (it recommended 0 for a
	// stable window after it was last active, or is at zero, or its
	// activation timed out): mode control should put it in proxy mode.
	// Desired reaches 0 only once that mode is confirmed long enough.
	WantZero bool
	// Reason says why Desired differs from Recommended ("" otherwise).
	Reason string
	// ActivationTimedOut is true while a wake-up from zero has had no
	// ready pod for ActivationTimeout: from that decision until the
	// revision is back at zero (or, when its bounds forbid zero, until a
	// pod is ready). Mode control reports it as a wake failure.
	ActivationTimedOut bool
}

// Gate is the per-revision scaler stage: scale bounds and the scale-to-zero
// gate, after Knative's scaler (scale, handleScaleToZero). InitialScale is
// a minimum until that many pods were ready once; a revision first seen at
// zero replicas counts as initialized (idle, not new). A revision goes
// to 0 only when scale to zero is enabled and allowed by its bounds, it
// has been idle for its stable window, every Envoy has confirmed proxy mode
// for at least ScaleToZeroGracePeriod, and ScaleToZeroPodRetention has
// passed since it became idle. While waking from zero (an activation) a
// zero recommendation is held; an activation without a ready pod within
// ActivationTimeout scales back to 0 (proxy mode confirmed, no grace) and
// the next wake waits for a new request (Poke). Not safe for concurrent
// use.
type Gate struct {
	seen            bool      // Decide was called before
	initialized     bool      // InitialScale was reached
	activeAt        time.Time // last time it was active (or created)
	inactiveSince   time.Time // zero while active
	activationStart time.Time // zero unless waking from zero
	failed          bool      // the last activation timed out
}

// NewGate returns the stage for a revision first seen at now: it counts as
// active then, so it is not scaled to zero within one stable window.
func NewGate(now time.Time) *Gate { return &Gate{activeAt: now} }

func (g *Gate) activating() bool { return !g.activationStart.IsZero() }

// Decide applies bounds and the gate at in.Now.
func (g *Gate) Decide(in GateInput) GateOutput {
	spec := in.Spec
	if !g.seen {
		// A revision first seen at zero is idle, not new: after a restart
		// of thaw its initial scale must not wake it.
		g.seen = true
		g.initialized = in.Current == 0
	}
	if !g.initialized && in.Ready >= spec.InitialScale {
		g.initialized = true
	}
	if g.activating() && in.Ready > 0 {
		g.activationStart = time.Time{}
	}
	if in.Poked || in.Current > 0 {
		g.failed = false
	}
	// An open warm window (wake policy schedule) raises the minimum.
	lo, hi := max(spec.MinScale, spec.Wake.MinScaleAt(in.Now)), spec.MaxScale
	if !g.initialized {
		lo = max(lo, spec.InitialScale)
	}
	if !in.EnableScaleToZero {
		lo = max(lo, 1)
	}

	rec := in.Current
	if in.Result.ScaleValid {
		rec = in.Result.DesiredPodCount
	}
	if in.Current == 0 && !in.Poked && spec.Wake.AnswersAtZero() {
		// Envoy's stats count the requests a wake policy answered at zero
		// (probes, crawlers): only a held request, which pokes, wakes it.
		rec = 0
	}
	if in.Poked && in.Current == 0 {
		rec = max(rec, 1)
	}
	reason := ""
	if g.failed && in.Current == 0 && rec > 0 && lo == 0 {
		rec, reason = 0, ReasonActivationFailed
	}
	if rec > 0 {
		rec = max(rec, spec.ActivationScale)
	}
	rec = applyBounds(rec, lo, hi)
	out := GateOutput{Recommended: rec, Desired: rec, Reason: reason}

	if g.activating() && in.Ready == 0 && in.Current > 0 &&
		in.Now.Sub(g.activationStart) >= spec.ActivationTimeout {
		out.Reason, out.ActivationTimedOut = ReasonActivationTimeout, true
		if lo > 0 {
			return out // bounds forbid zero: keep trying
		}
		out.WantZero = true
		if !in.ProxyConfirmed {
			out.Desired = in.Current
			return out
		}
		g.activationStart, g.failed = time.Time{}, true
		g.inactiveSince, g.activeAt = in.Now, time.Time{}
		out.Desired = 0
		return out
	}

	if rec > 0 {
		g.activeAt, g.inactiveSince = in.Now, time.Time{}
		if in.Current == 0 && !g.activating() {
			g.activationStart = in.Now
		}
		return out
	}
	if in.Current == 0 {
		if g.inactiveSince.IsZero() {
			g.inactiveSince = in.Now
		}
		out.WantZero = true
		return out
	}
	out.Desired = 1 // hold one pod while the gate is closed
	if g.activating() {
		out.Reason = ReasonActivating
		return out
	}
	if g.inactiveSince.IsZero() && in.Now.Sub(g.activeAt) >= spec.StableWindow {
		g.inactiveSince = in.Now
	}
	if g.inactiveSince.IsZero() {
		out.Reason = ReasonActiveWindow
		return out
	}
	out.WantZero = true
	switch {
	case !in.ProxyConfirmed:
		out.Reason = ReasonProxyUnconfirmed
	case in.Now.Sub(in.ProxySince) < spec.ScaleToZeroGracePeriod:
		out.Reason = ReasonGracePeriod
	case in.Now.Sub(g.inactiveSince) < spec.ScaleToZeroPodRetention:
		out.Reason = ReasonPodRetention
	default:
		out.Desired = 0
	}
	return out
}

// applyBounds clamps desired to [lo, hi]; hi 0 means unlimited and wins
// over lo.
func applyBounds(desired, lo, hi int32) int32 {
	desired = max(desired, lo)
	if hi > 0 {
		desired = min(desired, hi)
	}
	return desired
}
