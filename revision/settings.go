package revision

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Settings keys, without prefix. On Kubernetes they are annotations under
// ThawPrefix (or KnativePrefix, accepted as an alias); in the local YAML file
// they are the keys of a revision's "autoscaling" map.
const (
	KeyContainerConcurrency     = "container-concurrency"
	KeyMetric                   = "metric"
	KeyTarget                   = "target"
	KeyTargetUtilization        = "target-utilization-percentage"
	KeyMinScale                 = "min-scale"
	KeyMaxScale                 = "max-scale"
	KeyInitialScale             = "initial-scale"
	KeyActivationScale          = "activation-scale"
	KeyWindow                   = "window"
	KeyPanicWindowPercentage    = "panic-window-percentage"
	KeyPanicThresholdPercentage = "panic-threshold-percentage"
	KeyScaleDownDelay           = "scale-down-delay"
	KeyMaxScaleUpRate           = "max-scale-up-rate"
	KeyMaxScaleDownRate         = "max-scale-down-rate"
	KeyTargetBurstCapacity      = "target-burst-capacity"
	KeyScaleToZeroGracePeriod   = "scale-to-zero-grace-period"
	KeyScaleToZeroPodRetention  = "scale-to-zero-pod-retention-period"
	KeyActivationTimeout        = "activation-timeout"
	KeyHoldTimeout              = "hold-timeout"
	KeyQueueDepth               = "queue-depth"
	KeyProtocol                 = "protocol"
	KeyRequestTimeout           = "request-timeout"
	KeyIdleTimeout              = "idle-timeout"
)

// Annotation prefixes. A key under ThawPrefix wins over the same key under
// KnativePrefix.
const (
	ThawPrefix    = "autoscaling.thaw.dev/"
	KnativePrefix = "autoscaling.knative.dev/"
)

// Knative's historical names for the same settings.
var aliases = map[string]string{
	"minScale":        KeyMinScale,
	"maxScale":        KeyMaxScale,
	"initialScale":    KeyInitialScale,
	"activationScale": KeyActivationScale,
}

type setter func(s *Spec, v string) error

var setters = map[string]setter{
	KeyContainerConcurrency: intSetter(func(s *Spec, n int) { s.ContainerConcurrency = n }),
	KeyMetric: func(s *Spec, v string) error {
		s.Metric = Metric(strings.ToLower(v))
		return nil
	},
	KeyTarget:                   floatSetter(func(s *Spec, f float64) { s.Target = f }),
	KeyTargetUtilization:        floatSetter(func(s *Spec, f float64) { s.TargetUtilizationPercentage = f }),
	KeyMinScale:                 intSetter(func(s *Spec, n int) { s.MinScale = int32(n) }),
	KeyMaxScale:                 intSetter(func(s *Spec, n int) { s.MaxScale = int32(n) }),
	KeyInitialScale:             intSetter(func(s *Spec, n int) { s.InitialScale = int32(n) }),
	KeyActivationScale:          intSetter(func(s *Spec, n int) { s.ActivationScale = int32(n) }),
	KeyWindow:                   durationSetter(func(s *Spec, d time.Duration) { s.StableWindow = d }),
	KeyPanicWindowPercentage:    floatSetter(func(s *Spec, f float64) { s.PanicWindowPercentage = f }),
	KeyPanicThresholdPercentage: floatSetter(func(s *Spec, f float64) { s.PanicThresholdPercentage = f }),
	KeyScaleDownDelay:           durationSetter(func(s *Spec, d time.Duration) { s.ScaleDownDelay = d }),
	KeyMaxScaleUpRate:           floatSetter(func(s *Spec, f float64) { s.MaxScaleUpRate = f }),
	KeyMaxScaleDownRate:         floatSetter(func(s *Spec, f float64) { s.MaxScaleDownRate = f }),
	KeyTargetBurstCapacity:      floatSetter(func(s *Spec, f float64) { s.TargetBurstCapacity = f }),
	KeyScaleToZeroGracePeriod:   durationSetter(func(s *Spec, d time.Duration) { s.ScaleToZeroGracePeriod = d }),
	KeyScaleToZeroPodRetention:  durationSetter(func(s *Spec, d time.Duration) { s.ScaleToZeroPodRetention = d }),
	KeyActivationTimeout:        durationSetter(func(s *Spec, d time.Duration) { s.ActivationTimeout = d }),
	KeyHoldTimeout:              durationSetter(func(s *Spec, d time.Duration) { s.HoldTimeout = d }),
	KeyQueueDepth:               intSetter(func(s *Spec, n int) { s.QueueDepth = n }),
	KeyProtocol: func(s *Spec, v string) error {
		s.Protocol = Protocol(strings.ToLower(strings.TrimSpace(v)))
		return nil
	},
	KeyRequestTimeout: durationSetter(func(s *Spec, d time.Duration) { s.RequestTimeout = d }),
	KeyIdleTimeout:    durationSetter(func(s *Spec, d time.Duration) { s.IdleTimeout = d }),
}

// intRanges are the bounds of every integer setting, checked on the value as
// written before it is stored (a Spec field may be narrower than int, and a
// wrapped value must never pass). A test checks that every setter that
// takes integers has an entry.
var intRanges = map[string]struct {
	lo, hi int64
	note   string
}{
	KeyContainerConcurrency: {0, 1000, " (0 = unlimited)"},
	KeyMinScale:             {0, math.MaxInt32, ""},
	KeyMaxScale:             {0, math.MaxInt32, " (0 = unlimited)"},
	KeyInitialScale:         {0, math.MaxInt32, ""},
	KeyActivationScale:      {1, math.MaxInt32, ""},
	KeyQueueDepth:           {1, 1_000_000, ""},
}

// checkInt returns "" when v is an integer within name's range, else what
// is wanted instead.
func checkInt(name, v string) string {
	r, ok := intRanges[name]
	if !ok {
		return ""
	}
	want := fmt.Sprintf("an integer %d..%d%s", r.lo, r.hi, r.note)
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil || n < r.lo || n > r.hi {
		return want
	}
	return ""
}

func intSetter(set func(*Spec, int)) setter {
	return func(s *Spec, v string) error {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil {
			return errors.New("an integer")
		}
		set(s, n)
		return nil
	}
}

// floatSetter refuses NaN and ±Inf in every spelling strconv accepts
// ("Inf", "+infinity", "nan") and values that overflow float64 ("1e400").
func floatSetter(set func(*Spec, float64)) setter {
	return func(s *Spec, v string) error {
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			return errors.New("a number")
		}
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return errors.New("a finite number")
		}
		set(s, f)
		return nil
	}
}

// durationSetter accepts what ParseDuration accepts.
func durationSetter(set func(*Spec, time.Duration)) setter {
	return func(s *Spec, v string) error {
		d, err := ParseDuration(v)
		if err != nil {
			return err
		}
		set(s, d)
		return nil
	}
}

// ParseDuration parses a duration setting: a Go duration ("90s", "1m30s")
// or, as Knative accepts for some keys, a bare number of seconds ("15",
// "0.5"). Surrounding spaces are ignored. It returns an error (whose text
// says what is wanted) for anything else, including non-finite numbers and
// values beyond time.Duration's range (about 292 years).
func ParseDuration(v string) (time.Duration, error) {
	v = strings.TrimSpace(v)
	if d, err := time.ParseDuration(v); err == nil {
		return d, nil
	}
	n, err := strconv.ParseFloat(v, 64)
	if err == nil && !math.IsNaN(n) && !math.IsInf(n, 0) {
		ns := n * float64(time.Second)
		// float64(MaxInt64) rounds up to 2^63, so < excludes it.
		if ns < float64(math.MaxInt64) && ns > float64(math.MinInt64) {
			return time.Duration(ns), nil
		}
	}
	return 0, errors.New(`a duration such as "60s" or a finite number of seconds`)
}

// ParseSettings applies settings onto base and validates the result. Keys may
// be bare ("target"), under ThawPrefix or under KnativePrefix; other keys
// (other annotations) are ignored, except unknown keys under ThawPrefix or
// bare unknown keys, which are errors so typos do not pass silently. All
// problems are returned at once, joined; each wraps ErrInvalidSpec and names
// the key as written. Integers are checked against their range as written
// (no wrap-around). The returned Spec's hosts are in normal form (see
// NormalizeHost). It is ParseSettingsWithin with no Limits.
func ParseSettings(base Spec, settings map[string]string) (Spec, error) {
	return ParseSettingsWithin(base, settings, Limits{})
}

// ParseSettingsWithin is ParseSettings validating against lim as well. When
// lim.HoldBudget is below base's hold-timeout (a default), the hold-timeout
// defaults to the budget instead; a hold-timeout written above the budget
// is an error.
func ParseSettingsWithin(base Spec, settings map[string]string, lim Limits) (Spec, error) {
	type entry struct{ written, value string }
	chosen := map[string]entry{}
	fromThaw := map[string]bool{}
	var errs []error
	keys := make([]string, 0, len(settings))
	for k := range settings {
		keys = append(keys, k)
	}
	sort.Strings(keys) // deterministic error order
	for _, written := range keys {
		name, thaw, ok := splitKey(written)
		if !ok {
			continue
		}
		if alias, isAlias := aliases[name]; isAlias {
			name = alias
		}
		if _, known := setters[name]; !known {
			if thaw {
				errs = append(errs, &FieldError{Field: written, Value: settings[written], Allowed: "a known setting (" + knownKeys() + ")"})
			}
			continue
		}
		if fromThaw[name] && !thaw {
			continue
		}
		chosen[name] = entry{written, settings[written]}
		fromThaw[name] = thaw
	}
	spec := base
	spec.Hosts = append([]string(nil), base.Hosts...)
	if lim.HoldBudget > 0 && spec.HoldTimeout > lim.HoldBudget {
		spec.HoldTimeout = lim.HoldBudget
	}
	names := make([]string, 0, len(chosen))
	for n := range chosen {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		e := chosen[name]
		if want := checkInt(name, e.value); want != "" {
			errs = append(errs, &FieldError{Field: e.written, Value: e.value, Allowed: want})
			continue
		}
		if err := setters[name](&spec, e.value); err != nil {
			errs = append(errs, &FieldError{Field: e.written, Value: e.value, Allowed: err.Error()})
		}
	}
	if err := spec.ValidateWithin(lim); err != nil {
		// Name fields as the user wrote them (annotation or YAML key).
		for _, e := range unjoin(err) {
			var fe *FieldError
			if errors.As(e, &fe) {
				if c, ok := chosen[fe.Field]; ok {
					fe.Field = c.written
				}
			}
			errs = append(errs, e)
		}
	}
	for i, h := range spec.Hosts {
		spec.Hosts[i] = NormalizeHost(h)
	}
	if len(errs) > 0 {
		return spec, errors.Join(errs...)
	}
	return spec, nil
}

// IsSetting reports whether key names a known setting: bare ("target"),
// under ThawPrefix or KnativePrefix, or one of Knative's historical names
// ("minScale").
func IsSetting(key string) bool {
	name, _, ok := splitKey(key)
	if !ok {
		return false
	}
	if alias, isAlias := aliases[name]; isAlias {
		name = alias
	}
	_, known := setters[name]
	return known
}

// splitKey returns the bare setting name of a key and whether it came under
// ThawPrefix (bare keys count as thaw's own). ok is false for keys that are
// not settings at all (other annotations).
func splitKey(k string) (name string, thaw, ok bool) {
	switch {
	case strings.HasPrefix(k, ThawPrefix):
		return strings.TrimPrefix(k, ThawPrefix), true, true
	case strings.HasPrefix(k, KnativePrefix):
		return strings.TrimPrefix(k, KnativePrefix), false, true
	case strings.Contains(k, "/"):
		return "", false, false
	default:
		return k, true, true
	}
}

func knownKeys() string {
	ks := make([]string, 0, len(setters))
	for k := range setters {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return strings.Join(ks, ", ")
}

// Describe returns the settings of s as a map of bare keys to values, the
// inverse of ParseSettings; used by status output and docs.
func (s *Spec) Describe() map[string]string {
	return map[string]string{
		KeyContainerConcurrency: strconv.Itoa(s.ContainerConcurrency),
		KeyMetric:               string(s.Metric),
		KeyTarget:               fmt.Sprint(s.EffectiveTarget()),
		KeyTargetUtilization:    fmt.Sprint(s.TargetUtilizationPercentage),
		KeyMinScale:             fmt.Sprint(s.MinScale),
		KeyMaxScale:             fmt.Sprint(s.MaxScale),
		KeyWindow:               s.StableWindow.String(),
		KeyTargetBurstCapacity:  fmt.Sprint(s.TargetBurstCapacity),
		KeyHoldTimeout:          s.HoldTimeout.String(),
		KeyQueueDepth:           strconv.Itoa(s.QueueDepth),
		KeyProtocol:             string(s.Protocol),
		KeyRequestTimeout:       s.RequestTimeout.String(),
		KeyIdleTimeout:          s.IdleTimeout.String(),
	}
}

// unjoin returns the errors inside an errors.Join result, or err itself.
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}
