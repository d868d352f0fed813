package revision

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestParseSettings(t *testing.T) {
	base := validSpec()
	got, err := ParseSettings(base, map[string]string{
		ThawPrefix + KeyTarget:                   "10",
		KnativePrefix + KeyTarget:                "50", // thaw wins
		KnativePrefix + "minScale":               "1",
		KnativePrefix + KeyMaxScale:              "5",
		KeyWindow:                                "30s",
		ThawPrefix + KeyScaleDownDelay:           "15", // bare seconds
		KnativePrefix + "class":                  "kpa.autoscaling.knative.dev",
		"app.kubernetes.io/name":                 "ignored",
		ThawPrefix + KeyMetric:                   "RPS",
		ThawPrefix + KeyTargetBurstCapacity:      "-1",
		ThawPrefix + KeyContainerConcurrency:     "4",
		ThawPrefix + KeyPanicThresholdPercentage: "300",
	})
	if err != nil {
		t.Fatalf("ParseSettings: %v", err)
	}
	if got.Target != 10 || got.MinScale != 1 || got.MaxScale != 5 || got.StableWindow != 30*time.Second ||
		got.ScaleDownDelay != 15*time.Second || got.Metric != MetricRPS || got.TargetBurstCapacity != -1 ||
		got.ContainerConcurrency != 4 || got.PanicThresholdPercentage != 300 {
		t.Errorf("ParseSettings = %+v", got)
	}
	if len(base.Hosts) != 1 || base.Target != 0 {
		t.Errorf("base modified: %+v", base)
	}
}

func TestParseSettingsErrorsNameTheKey(t *testing.T) {
	_, err := ParseSettings(validSpec(), map[string]string{
		ThawPrefix + KeyTarget:         "ten",
		ThawPrefix + "targt":           "10",
		KnativePrefix + KeyMaxScale:    "-3",
		ThawPrefix + KeyScaleDownDelay: "soon",
	})
	if err == nil {
		t.Fatal("want errors")
	}
	if !errors.Is(err, ErrInvalidSpec) {
		t.Errorf("%v does not wrap ErrInvalidSpec", err)
	}
	for _, want := range []string{
		ThawPrefix + KeyTarget + `: value "ten" not allowed: want a number`,
		ThawPrefix + "targt",
		KnativePrefix + KeyMaxScale + `: value "-3"`,
		ThawPrefix + KeyScaleDownDelay,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not mention %q:\n%v", want, err)
		}
	}
}
