package revision

import (
	"errors"
	"strings"
	"testing"
)

func pct(p int32) *int32 { return &p }

func TestValidateTraffic(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*Spec)
		field  string // "" = valid
		text   string
	}{
		{"no traffic settings", func(*Spec) {}, "", ""},
		{"percent 0", func(s *Spec) { s.TrafficPercent = pct(0) }, "", ""},
		{"percent 100", func(s *Spec) { s.TrafficPercent = pct(100) }, "", ""},
		{"percent 101", func(s *Spec) { s.TrafficPercent = pct(101) }, FieldTrafficPercent, "0..100"},
		{"percent -1", func(s *Spec) { s.TrafficPercent = pct(-1) }, FieldTrafficPercent, "0..100"},
		{"tag", func(s *Spec) { s.Tag = "canary" }, "", ""},
		{"tag not a label", func(s *Spec) { s.Tag = "Canary.v2" }, FieldTag, "DNS label"},
		{"tag too long for its host", func(s *Spec) { s.Tag = strings.Repeat("t", 60) }, FieldTag, "valid DNS name"},
		{"tag with only wildcard hosts", func(s *Spec) { s.Hosts = []string{"*.example.com"}; s.Tag = "v2" }, FieldTag, "not a wildcard"},
		{"tag host among own hosts", func(s *Spec) {
			s.Hosts = []string{"hello.example.com", "v2-hello.example.com"}
			s.Tag = "v2"
		}, FieldTag, "already one of the revision's hosts"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := validSpec()
			tt.mutate(&s)
			err := s.Validate()
			if tt.field == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Field != tt.field || !strings.Contains(fe.Allowed, tt.text) {
				t.Fatalf("Validate() = %v, want a FieldError for %q saying %q", err, tt.field, tt.text)
			}
			if !errors.Is(err, ErrInvalidSpec) {
				t.Errorf("error %v does not wrap ErrInvalidSpec", err)
			}
		})
	}
}

func TestTagHost(t *testing.T) {
	tests := []struct {
		hosts []string
		tag   string
		want  string
	}{
		{[]string{"app.example.com"}, "canary", "canary-app.example.com"},
		{[]string{"*.example.com", "App.Example.com:8080"}, "v2", "v2-app.example.com"},
		{[]string{"app.example.com"}, "", ""},
		{[]string{"*.example.com"}, "v2", ""},
	}
	for _, tt := range tests {
		s := Spec{Hosts: tt.hosts, Tag: tt.tag}
		if got := s.TagHost(); got != tt.want {
			t.Errorf("TagHost(%v, %q) = %q, want %q", tt.hosts, tt.tag, got, tt.want)
		}
	}
}

func TestParseTrafficAnnotations(t *testing.T) {
	s := validSpec()
	err := ParseTrafficAnnotations(&s, map[string]string{AnnotationTrafficPercent: " 10 ", AnnotationTag: "canary", "other": "x"})
	if err != nil || s.TrafficPercent == nil || *s.TrafficPercent != 10 || s.Tag != "canary" {
		t.Fatalf("ParseTrafficAnnotations = %v, percent %v, tag %q; want 10 and canary", err, s.TrafficPercent, s.Tag)
	}
	s = validSpec()
	if err := ParseTrafficAnnotations(&s, nil); err != nil || s.TrafficPercent != nil || s.Tag != "" {
		t.Fatalf("no annotations: %v, percent %v, tag %q; want nothing set", err, s.TrafficPercent, s.Tag)
	}
	for _, bad := range []map[string]string{
		{AnnotationTrafficPercent: "110"},
		{AnnotationTrafficPercent: "ten"},
		{AnnotationTrafficPercent: "2147483648"},
		{AnnotationTag: "Not_A_Label"},
	} {
		s := validSpec()
		err := ParseTrafficAnnotations(&s, bad)
		var fe *FieldError
		if !errors.As(err, &fe) || bad[fe.Field] == "" {
			t.Errorf("%v: error %v, want a FieldError naming the annotation", bad, err)
		}
	}
}

func TestRegistryCopiesTrafficPercent(t *testing.T) {
	r := NewRegistry(RegistryOptions{})
	s := validSpec()
	p := int32(10)
	s.TrafficPercent = &p
	k := Key{Namespace: "a", Name: "b"}
	r.Upsert(k, s)
	p = 90 // the caller reuses its variable
	got := r.Snapshot().Get(k)
	if got == nil || got.Spec.TrafficPercent == nil || *got.Spec.TrafficPercent != 10 {
		t.Fatalf("registry spec percent = %v, want 10 (a copy)", got)
	}
}
