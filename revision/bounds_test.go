package revision

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// settingError parses one setting onto validSpec and returns the error's
// text ("" when accepted) and the spec.
func settingError(t *testing.T, key, value string, lim Limits) (string, Spec) {
	t.Helper()
	spec, err := ParseSettingsWithin(validSpec(), map[string]string{key: value}, lim)
	if err == nil {
		return "", spec
	}
	if !errors.Is(err, ErrInvalidSpec) {
		t.Errorf("%s=%q: error %v does not wrap ErrInvalidSpec", key, value, err)
	}
	return err.Error(), spec
}

func TestIntegerSettingsKeepTheirRange(t *testing.T) {
	tests := []struct {
		key, value string
		want       string // substring of the error; "" = accepted
	}{
		{KeyMaxScale, "4294967297", `max-scale: value "4294967297" not allowed: want an integer 0..2147483647 (0 = unlimited)`},
		{KeyMaxScale, "4294967296", `max-scale: value "4294967296" not allowed: want an integer 0..2147483647`},
		{KeyMinScale, "4294967301", `min-scale: value "4294967301" not allowed: want an integer 0..2147483647`},
		{KeyMaxScale, "2147483648", `value "2147483648" not allowed`},
		{KeyInitialScale, "-2147483649", `initial-scale: value "-2147483649" not allowed: want an integer 0..2147483647`},
		{KeyActivationScale, "0", `activation-scale: value "0" not allowed: want an integer 1..2147483647`},
		{KeyContainerConcurrency, "9223372036854775808", `container-concurrency: value "9223372036854775808" not allowed: want an integer 0..1000`},
		{KeyQueueDepth, "1000001", `queue-depth: value "1000001" not allowed: want an integer 1..1000000`},
		{KeyQueueDepth, "1e3", `queue-depth: value "1e3" not allowed`},
		{KeyMaxScale, "2147483647", ""},
		{KeyMinScale, " 3 ", ""},
		{KeyQueueDepth, "1000000", ""},
	}
	for _, tt := range tests {
		t.Run(tt.key+"="+tt.value, func(t *testing.T) {
			got, spec := settingError(t, tt.key, tt.value, Limits{})
			if tt.want == "" {
				if got != "" {
					t.Fatalf("refused: %s", got)
				}
				return
			}
			if !strings.Contains(got, tt.want) {
				t.Fatalf("error %q, want it to contain %q", got, tt.want)
			}
			if strings.Contains(got, "-2147483648") && !strings.Contains(tt.value, "-") {
				t.Errorf("error quotes a wrapped value: %s", got)
			}
			def := validSpec()
			if spec.MaxScale != def.MaxScale || spec.MinScale != def.MinScale || spec.QueueDepth != def.QueueDepth {
				t.Errorf("refused value was stored: %+v", spec)
			}
		})
	}
}

// TestEveryIntegerSettingHasARange finds the integer setters (they take "7"
// and refuse "7.5") and checks each has a range, so a new integer key cannot
// wrap silently.
func TestEveryIntegerSettingHasARange(t *testing.T) {
	for name, set := range setters {
		var s Spec
		if set(&s, "7") == nil && set(&s, "7.5") != nil {
			if _, ok := intRanges[name]; !ok {
				t.Errorf("integer setting %q has no entry in intRanges", name)
			}
		}
	}
}

func TestNonFiniteNumbersRefused(t *testing.T) {
	var floatKeys, durationKeys []string
	for name, set := range setters {
		var s Spec
		switch {
		case set(&s, "7.5") == nil && set(&s, "7s") != nil:
			floatKeys = append(floatKeys, name)
		case set(&s, "7s") == nil && set(&s, "abc") != nil:
			durationKeys = append(durationKeys, name)
		}
	}
	if len(floatKeys) < 7 || len(durationKeys) < 6 {
		t.Fatalf("found %d float and %d duration settings; the probe is broken", len(floatKeys), len(durationKeys))
	}
	spellings := []string{"Inf", "+Inf", "-Inf", "inf", "infinity", "+Infinity", "-INFINITY", "NaN", "nan", "+NaN", "1e400", "-1e400", "0x1p2000"}
	for _, key := range append(floatKeys, durationKeys...) {
		for _, v := range spellings {
			got, _ := settingError(t, ThawPrefix+key, v, Limits{})
			if !strings.Contains(got, ThawPrefix+key+`: value "`+v+`" not allowed`) {
				t.Errorf("%s=%s: error %q, want it refused naming the key and value", key, v, got)
			}
		}
	}
	for _, v := range []string{"1e300", "9223372037", "-9223372037"} {
		if got, _ := settingError(t, KeyHoldTimeout, v, Limits{}); !strings.Contains(got, `hold-timeout: value "`+v+`" not allowed: want a duration`) {
			t.Errorf("hold-timeout=%s: %q, want an out-of-range duration refused", v, got)
		}
	}
}

func TestValidateRefusesNonFiniteFloats(t *testing.T) {
	inf := 1 / zero()
	nan := zero() / zero()
	for _, f := range []struct {
		field string
		set   func(*Spec, float64)
	}{
		{KeyTarget, func(s *Spec, v float64) { s.Target = v }},
		{KeyTargetUtilization, func(s *Spec, v float64) { s.TargetUtilizationPercentage = v }},
		{KeyPanicWindowPercentage, func(s *Spec, v float64) { s.PanicWindowPercentage = v }},
		{KeyPanicThresholdPercentage, func(s *Spec, v float64) { s.PanicThresholdPercentage = v }},
		{KeyMaxScaleUpRate, func(s *Spec, v float64) { s.MaxScaleUpRate = v }},
		{KeyMaxScaleDownRate, func(s *Spec, v float64) { s.MaxScaleDownRate = v }},
		{KeyTargetBurstCapacity, func(s *Spec, v float64) { s.TargetBurstCapacity = v }},
	} {
		for _, v := range []float64{inf, -inf, nan} {
			s := validSpec()
			f.set(&s, v)
			var fe *FieldError
			if err := s.Validate(); !errors.As(err, &fe) || fe.Field != f.field {
				t.Errorf("%s = %v: Validate() = %v, want a FieldError for it", f.field, v, err)
			}
		}
	}
}

func zero() float64 { return 0 }

func TestHoldTimeoutWithinHoldBudget(t *testing.T) {
	lim := Limits{HoldBudget: 30 * time.Second}
	got, _ := settingError(t, ThawPrefix+KeyHoldTimeout, "45s", lim)
	want := `autoscaling.thaw.dev/hold-timeout: value "45s" not allowed: want 1s..30s (at most the hold budget, --hold-budget 30s)`
	if !strings.Contains(got, want) {
		t.Errorf("error %q, want %q", got, want)
	}
	if got, spec := settingError(t, KeyHoldTimeout, "30s", lim); got != "" || spec.HoldTimeout != 30*time.Second {
		t.Errorf("hold-timeout = budget: %q, %v", got, spec.HoldTimeout)
	}
	// The default (60s) above a lower budget becomes the budget.
	spec, err := ParseSettingsWithin(validSpec(), nil, lim)
	if err != nil || spec.HoldTimeout != 30*time.Second {
		t.Errorf("default hold-timeout under a 30s budget = %v, %v; want 30s", spec.HoldTimeout, err)
	}
	// A budget above the fixed maximum leaves the maximum.
	if got, _ := settingError(t, KeyHoldTimeout, "16m", Limits{HoldBudget: time.Hour}); !strings.Contains(got, "1s..15m0s") {
		t.Errorf("16m under a 1h budget: %q, want the 15m maximum", got)
	}
	// Without limits the default stays.
	if spec, err := ParseSettings(validSpec(), nil); err != nil || spec.HoldTimeout != DefaultHoldTimeout {
		t.Errorf("no limits: %v, %v", spec.HoldTimeout, err)
	}
}
