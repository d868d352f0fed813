package revision

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// MaxHoldTimeout is the largest hold-timeout any revision may set; a lower
// hold budget (Limits.HoldBudget) lowers it.
const MaxHoldTimeout = 15 * time.Minute

// ErrInvalidSpec is wrapped by every error Validate returns, so callers can
// tell configuration errors from I/O errors with errors.Is.
var ErrInvalidSpec = errors.New("invalid revision spec")

// FieldError is one invalid setting: which field, the value given and the
// allowed range or form.
type FieldError struct {
	Field   string
	Value   string
	Allowed string
}

// Error returns "field: value V not allowed: want A".
func (e *FieldError) Error() string {
	return fmt.Sprintf("%s: value %q not allowed: want %s", e.Field, e.Value, e.Allowed)
}

// Unwrap makes errors.Is(err, ErrInvalidSpec) true.
func (e *FieldError) Unwrap() error { return ErrInvalidSpec }

// Limits are bounds on revision settings that come from thaw's own
// configuration (flags) rather than from the revision. The zero value sets
// none beyond the fixed ranges of Validate.
type Limits struct {
	// HoldBudget is the global hold budget (--hold-budget, xds
	// Config.HoldBudget): Envoy cuts every held request at this time, so a
	// hold-timeout above it is refused. 0: no such bound.
	HoldBudget time.Duration
	// AllowNoHosts accepts a Spec without hosts: a Revision resource routed
	// by Envoy Gateway (an HTTPRoute backendRef) needs none; thaw's own
	// Envoy then has its cluster and endpoints but no route to it.
	AllowNoHosts bool
}

// Validate checks every field against its bounds and returns all problems at
// once, joined with errors.Join; each is a *FieldError naming the field (by
// its settings key) and the allowed range. It returns nil for a valid Spec.
// It is ValidateWithin with no Limits.
func (s *Spec) Validate() error { return s.ValidateWithin(Limits{}) }

// ValidateWithin is Validate with the bounds of lim as well (hold-timeout
// at most lim.HoldBudget). Hosts are compared in normal form (see
// NormalizeHost) and quoted as written; every float must be finite.
func (s *Spec) ValidateWithin(lim Limits) error {
	var errs []error
	bad := func(field string, value any, allowed string) {
		errs = append(errs, &FieldError{Field: field, Value: fmt.Sprint(value), Allowed: allowed})
	}
	if len(s.Hosts) == 0 && !lim.AllowNoHosts {
		bad("hosts", "", "at least one host name")
	}
	seen := make(map[string]string, len(s.Hosts))
	for _, h := range s.Hosts {
		n := NormalizeHost(h)
		if msg := checkHost(n); msg != "" {
			bad("hosts", h, msg)
		} else if first, dup := seen[n]; dup {
			bad("hosts", h, fmt.Sprintf("each host once (%q is the same host)", first))
		} else {
			seen[n] = h
		}
	}
	if s.Port < 0 || s.Port > 65535 {
		bad("port", s.Port, "1..65535 (0 = per-backend port)")
	}
	if s.Protocol != ProtocolHTTP1 && s.Protocol != ProtocolH2C {
		bad(KeyProtocol, s.Protocol, `"http1" or "h2c"`)
	}
	if s.ContainerConcurrency < 0 || s.ContainerConcurrency > 1000 {
		bad(KeyContainerConcurrency, s.ContainerConcurrency, "0..1000 (0 = unlimited)")
	}
	if s.Metric != MetricConcurrency && s.Metric != MetricRPS {
		bad(KeyMetric, s.Metric, `"concurrency" or "rps"`)
	}
	// Float checks are written so that NaN and ±Inf fail them.
	if !(s.Target == 0 || (s.Target >= 0.01 && s.Target <= math.MaxFloat64)) {
		bad(KeyTarget, s.Target, "a finite number >= 0.01 (0 = default for the metric)")
	}
	if !(s.TargetUtilizationPercentage >= 1 && s.TargetUtilizationPercentage <= 100) {
		bad(KeyTargetUtilization, s.TargetUtilizationPercentage, "1..100")
	}
	if s.MinScale < 0 {
		bad(KeyMinScale, s.MinScale, ">= 0")
	}
	if s.MaxScale < 0 {
		bad(KeyMaxScale, s.MaxScale, ">= 0 (0 = unlimited)")
	}
	if s.MaxScale > 0 && s.MinScale > s.MaxScale {
		bad(KeyMinScale, s.MinScale, fmt.Sprintf("<= max-scale (%d)", s.MaxScale))
	}
	if s.InitialScale < 0 {
		bad(KeyInitialScale, s.InitialScale, ">= 0")
	}
	if s.ActivationScale < 1 {
		bad(KeyActivationScale, s.ActivationScale, ">= 1")
	}
	if s.MaxScale > 0 && s.ActivationScale > s.MaxScale {
		bad(KeyActivationScale, s.ActivationScale, fmt.Sprintf("<= max-scale (%d)", s.MaxScale))
	}
	checkDuration(bad, KeyWindow, s.StableWindow, 6*time.Second, time.Hour)
	if !(s.PanicWindowPercentage >= 1 && s.PanicWindowPercentage <= 100) {
		bad(KeyPanicWindowPercentage, s.PanicWindowPercentage, "1..100")
	}
	if !(s.PanicThresholdPercentage >= 110 && s.PanicThresholdPercentage <= 1000) {
		bad(KeyPanicThresholdPercentage, s.PanicThresholdPercentage, "110..1000")
	}
	checkDuration(bad, KeyScaleDownDelay, s.ScaleDownDelay, 0, time.Hour)
	if !(s.MaxScaleUpRate > 1 && s.MaxScaleUpRate <= math.MaxFloat64) {
		bad(KeyMaxScaleUpRate, s.MaxScaleUpRate, "a finite number > 1")
	}
	if !(s.MaxScaleDownRate > 1 && s.MaxScaleDownRate <= math.MaxFloat64) {
		bad(KeyMaxScaleDownRate, s.MaxScaleDownRate, "a finite number > 1")
	}
	if !(s.TargetBurstCapacity == -1 || (s.TargetBurstCapacity >= 0 && s.TargetBurstCapacity <= math.MaxFloat64)) {
		bad(KeyTargetBurstCapacity, s.TargetBurstCapacity, "-1 (activator always in path) or a finite number >= 0")
	}
	checkDuration(bad, KeyScaleToZeroGracePeriod, s.ScaleToZeroGracePeriod, 0, time.Hour)
	checkDuration(bad, KeyScaleToZeroPodRetention, s.ScaleToZeroPodRetention, 0, time.Hour)
	checkDuration(bad, KeyActivationTimeout, s.ActivationTimeout, time.Second, time.Hour)
	if lim.HoldBudget > 0 && lim.HoldBudget < MaxHoldTimeout {
		if s.HoldTimeout < time.Second || s.HoldTimeout > lim.HoldBudget {
			bad(KeyHoldTimeout, s.HoldTimeout, fmt.Sprintf("1s..%s (at most the hold budget, --hold-budget %s)", lim.HoldBudget, lim.HoldBudget))
		}
	} else {
		checkDuration(bad, KeyHoldTimeout, s.HoldTimeout, time.Second, MaxHoldTimeout)
	}
	checkDuration(bad, KeyRequestTimeout, s.RequestTimeout, time.Second, MaxRequestTimeout)
	checkDuration(bad, KeyIdleTimeout, s.IdleTimeout, 0, MaxRequestTimeout)
	if s.QueueDepth < 1 || s.QueueDepth > 1_000_000 {
		bad(KeyQueueDepth, s.QueueDepth, "1..1000000")
	}
	s.validateTraffic(bad)
	if len(errs) == 0 {
		return nil
	}
	return errors.Join(errs...)
}

func checkDuration(bad func(string, any, string), field string, d, lo, hi time.Duration) {
	if d < lo || d > hi {
		bad(field, d, fmt.Sprintf("%s..%s", lo, hi))
	}
}
