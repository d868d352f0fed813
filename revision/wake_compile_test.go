package revision

import (
	"errors"
	"slices"
	"testing"

	"github.com/thaw-dev/thaw/wake"
)

func TestCompileWake(t *testing.T) {
	tests := []struct {
		name, prefix string
		c            *wake.Config
		wantFields   []string
		wantPolicy   bool
	}{
		{name: "unset", prefix: "spec.wake.", c: nil},
		{name: "valid", prefix: "wake.", c: &wake.Config{ColdStartHeader: true}, wantPolicy: true},
		{name: "bad fields", prefix: "spec.wake.", c: &wake.Config{
			Rules:    []wake.RuleConfig{{Name: "a", UserAgent: "(("}},
			Schedule: []wake.WindowConfig{{Name: "w", Start: "61 * * * *", Duration: "1h", MinScale: 1}},
		}, wantFields: []string{"spec.wake.rules[0].userAgent", "spec.wake.schedule[0].start"}},
		{name: "annotation prefix", prefix: "wake.thaw.dev/policy: ", c: &wake.Config{
			WaitingPage: &wake.PageConfig{Refresh: "0s"},
		}, wantFields: []string{"wake.thaw.dev/policy: waitingPage.refresh"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pol, errs := CompileWake(tt.prefix, tt.c)
			var got []string
			for _, err := range errs {
				var fe *FieldError
				if !errors.As(err, &fe) {
					t.Fatalf("error %v (%T), want a *FieldError", err, err)
				}
				got = append(got, fe.Field)
			}
			if !slices.Equal(got, tt.wantFields) {
				t.Errorf("fields %q, want %q", got, tt.wantFields)
			}
			if (pol != nil) != tt.wantPolicy {
				t.Errorf("policy %v, want one: %v", pol, tt.wantPolicy)
			}
		})
	}
}
