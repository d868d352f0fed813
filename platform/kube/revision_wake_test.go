package kube

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/thaw-dev/thaw/api/v1alpha1"
	"github.com/thaw-dev/thaw/revision"
	"github.com/thaw-dev/thaw/wake"
)

func TestSpecFromRevisionWake(t *testing.T) {
	r := testRevision(func(r *v1alpha1.Revision) {
		r.Spec.Wake = &wake.Config{
			Rules: []wake.RuleConfig{{Name: "kube-probe", UserAgent: "kube-probe/.*",
				Response: &wake.ResponseConfig{Status: 200, Body: "ok"}}},
			WaitingPage:     &wake.PageConfig{Refresh: "3s"},
			ColdStartHeader: true,
			Schedule:        []wake.WindowConfig{{Name: "office", Start: "0 8 * * 1-5", Duration: "10h", TimeZone: "Europe/Paris", MinScale: 2}},
		}
	})
	s, err := specFromRevision(revision.DefaultSpec(), revision.Limits{}, r)
	if err != nil {
		t.Fatal(err)
	}
	if p := s.Wake; p == nil || len(p.Rules) != 1 || p.Page == nil || !p.ColdStartHeader || len(p.Windows) != 1 {
		t.Fatalf("wake policy %+v", s.Wake)
	}

	// What the schema cannot check (regular expressions, cron, time
	// zones) is refused here with the Revision's field paths.
	r.Spec.Wake.Rules[0].UserAgent = "(("
	r.Spec.Wake.Schedule[0].Start = "61 * * * *"
	r.Spec.Wake.Schedule[0].TimeZone = "Mars/Olympus"
	_, err = specFromRevision(revision.DefaultSpec(), revision.Limits{}, r)
	var got []string
	for _, e := range unjoin(err) {
		var fe *revision.FieldError
		if errors.As(e, &fe) {
			got = append(got, fe.Field)
		}
	}
	want := []string{"spec.wake.rules[0].userAgent", "spec.wake.schedule[0].start", "spec.wake.schedule[0].timeZone"}
	if !slices.Equal(got, want) || !errors.Is(err, revision.ErrInvalidSpec) {
		t.Fatalf("errors %q (%v), want %q", got, err, want)
	}
}

func TestParseSpecWakeAnnotation(t *testing.T) {
	ann := map[string]string{AnnotationHosts: "a.example.com", AnnotationWakePolicy: `
rules:
  - name: kube-probe
    userAgent: "kube-probe/.*"
coldStartHeader: true
`}
	spec, err := parseSpec(revision.DefaultSpec(), revision.Limits{}, ann, nil)
	if err != nil {
		t.Fatal(err)
	}
	if spec.Wake == nil || len(spec.Wake.Rules) != 1 || !spec.Wake.ColdStartHeader {
		t.Fatalf("wake policy %+v", spec.Wake)
	}
	for _, bad := range []string{"rulez: []", "rules: [{name: a}]", "{"} {
		ann[AnnotationWakePolicy] = bad
		if _, err := parseSpec(revision.DefaultSpec(), revision.Limits{}, ann, nil); !errors.Is(err, revision.ErrInvalidSpec) ||
			!strings.Contains(err.Error(), AnnotationWakePolicy) {
			t.Errorf("annotation %q: error %v, want an invalid spec naming %s", bad, err, AnnotationWakePolicy)
		}
	}
}
