package revision

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func validSpec() Spec {
	s := DefaultSpec()
	s.Hosts = []string{"hello.example.com"}
	s.Port = 8080
	return s
}

func TestDefaultSpecIsValid(t *testing.T) {
	s := validSpec()
	if err := s.Validate(); err != nil {
		t.Fatalf("default spec invalid: %v", err)
	}
	if got := s.PanicWindow(); got != 6*time.Second {
		t.Errorf("PanicWindow = %v, want 6s (10%% of 60s)", got)
	}
	if got := s.TotalPerPod(); got != 70 {
		t.Errorf("TotalPerPod = %v, want 70 (100 x 70%%)", got)
	}
}

func TestValidateReportsEveryField(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*Spec)
		field  string
	}{
		{"no hosts", func(s *Spec) { s.Hosts = nil }, "hosts"},
		{"bad host", func(s *Spec) { s.Hosts = []string{"bad host"} }, "hosts"},
		{"duplicate host", func(s *Spec) { s.Hosts = []string{"a.b", "a.b"} }, "hosts"},
		{"port", func(s *Spec) { s.Port = 70000 }, "port"},
		{"container concurrency", func(s *Spec) { s.ContainerConcurrency = 1001 }, KeyContainerConcurrency},
		{"metric", func(s *Spec) { s.Metric = "cpu" }, KeyMetric},
		{"target", func(s *Spec) { s.Target = 0.001 }, KeyTarget},
		{"utilization", func(s *Spec) { s.TargetUtilizationPercentage = 101 }, KeyTargetUtilization},
		{"min > max", func(s *Spec) { s.MinScale, s.MaxScale = 5, 3 }, KeyMinScale},
		{"negative max", func(s *Spec) { s.MaxScale = -1 }, KeyMaxScale},
		{"activation 0", func(s *Spec) { s.ActivationScale = 0 }, KeyActivationScale},
		{"window short", func(s *Spec) { s.StableWindow = 5 * time.Second }, KeyWindow},
		{"window long", func(s *Spec) { s.StableWindow = 2 * time.Hour }, KeyWindow},
		{"panic window", func(s *Spec) { s.PanicWindowPercentage = 0.5 }, KeyPanicWindowPercentage},
		{"panic threshold", func(s *Spec) { s.PanicThresholdPercentage = 100 }, KeyPanicThresholdPercentage},
		{"scale down delay", func(s *Spec) { s.ScaleDownDelay = -time.Second }, KeyScaleDownDelay},
		{"up rate", func(s *Spec) { s.MaxScaleUpRate = 1 }, KeyMaxScaleUpRate},
		{"down rate", func(s *Spec) { s.MaxScaleDownRate = 0.5 }, KeyMaxScaleDownRate},
		{"tbc", func(s *Spec) { s.TargetBurstCapacity = -2 }, KeyTargetBurstCapacity},
		{"tbc fraction", func(s *Spec) { s.TargetBurstCapacity = -0.5 }, KeyTargetBurstCapacity},
		{"hold timeout", func(s *Spec) { s.HoldTimeout = 0 }, KeyHoldTimeout},
		{"queue depth", func(s *Spec) { s.QueueDepth = 0 }, KeyQueueDepth},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := validSpec()
			tt.mutate(&s)
			err := s.Validate()
			if err == nil {
				t.Fatal("Validate() = nil, want an error")
			}
			if !errors.Is(err, ErrInvalidSpec) {
				t.Errorf("error %v does not wrap ErrInvalidSpec", err)
			}
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Field != tt.field {
				t.Errorf("error %v: want a FieldError for %q", err, tt.field)
			}
		})
	}
}

func TestValidateReturnsAllProblemsAtOnce(t *testing.T) {
	s := validSpec()
	s.Target = -1
	s.QueueDepth = 0
	s.StableWindow = time.Second
	err := s.Validate()
	for _, want := range []string{KeyTarget, KeyQueueDepth, KeyWindow, "6s..1h0m0s"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not mention %q", err, want)
		}
	}
}

func TestEffectiveTarget(t *testing.T) {
	tests := []struct {
		name   string
		metric Metric
		target float64
		cc     int
		want   float64
	}{
		{"default concurrency", MetricConcurrency, 0, 0, 100},
		{"default rps", MetricRPS, 0, 0, 200},
		{"capped by container concurrency", MetricConcurrency, 0, 10, 10},
		{"explicit", MetricConcurrency, 7, 10, 7},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := validSpec()
			s.Metric, s.Target, s.ContainerConcurrency = tt.metric, tt.target, tt.cc
			if got := s.EffectiveTarget(); got != tt.want {
				t.Errorf("EffectiveTarget() = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestParseKey(t *testing.T) {
	k, err := ParseKey("ns/name")
	if err != nil || k != (Key{"ns", "name"}) || k.String() != "ns/name" {
		t.Fatalf("ParseKey = %v, %v", k, err)
	}
	for _, bad := range []string{"", "ns", "/name", "ns/", "a/b/c"} {
		if _, err := ParseKey(bad); err == nil {
			t.Errorf("ParseKey(%q) = nil error", bad)
		}
	}
}
