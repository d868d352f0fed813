package autoscaler

import (
	"time"

	"github.com/thaw-dev/thaw/revision"
)

// Decision is the multiscaler's verdict for one revision at one moment: what
// it applies, what the decider would like before the scale-to-zero gate,
// and the inputs behind it. Mode control reads WantZero and the sign of
// ExcessBurstCapacity; `thaw status` shows the rest.
type Decision struct {
	Key  revision.Key
	Time time.Time
	// DesiredScale is the replica count applied to the scale target, after
	// the scale bounds and the scale-to-zero gate. While the gate holds a
	// would-be 0 it is 1 (or 0 when already at zero).
	DesiredScale int32
	// Recommended is the decider's replica count within the scale bounds,
	// before the gate. Recommended 0 with DesiredScale 1 means the gate is
	// holding the last pod (see Reason).
	Recommended int32
	// WantZero is true when the revision is idle and should go to zero:
	// mode control must switch it to proxy mode; replicas reach 0 once
	// every Envoy confirmed proxy mode for ScaleToZeroGracePeriod.
	WantZero bool
	// Reason says why DesiredScale differs from Recommended (Reason*
	// constants), or is empty.
	Reason string
	// ActivationTimedOut is true while a wake-up from zero has had no
	// ready pod for the revision's activation timeout, until the revision
	// is back at zero or a pod is ready (GateOutput.ActivationTimedOut):
	// mode control then answers its requests at once (a wake failure).
	ActivationTimedOut bool
	// CurrentScale and ReadyPods are the scale target's replicas and ready
	// replicas when the decision was taken.
	CurrentScale int32
	ReadyPods    int32
	// ExcessBurstCapacity is in the revision's metric unit (requests, or
	// requests per second); negative keeps the activator in the path. For an
	// invalid decision it is the last valid one's (initially −1, or 0 when
	// the target burst capacity is 0).
	ExcessBurstCapacity int32
	// InPanic reports the decider's panic mode.
	InPanic bool
	// Window averages, summed over sources.
	StableConcurrency, PanicConcurrency float64
	StableRPS, PanicRPS                 float64
	// Valid is false when the decider had no data: the scale was only
	// brought within bounds.
	Valid bool
}
