package revision

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Field names of the traffic settings, as FieldError.Field: the keys of a
// local revision's "traffic" map.
const (
	FieldTrafficPercent = "traffic.percent"
	FieldTag            = "traffic.tag"
)

// Annotations that carry the traffic settings of a Kubernetes workload
// (read by ParseTrafficAnnotations).
const (
	// AnnotationTrafficPercent is Spec.TrafficPercent: an integer 0..100.
	AnnotationTrafficPercent = "thaw.dev/traffic-percent"
	// AnnotationTag is Spec.Tag: a DNS label.
	AnnotationTag = "thaw.dev/tag"
)

// MaxTrafficPercent is the whole of a host's traffic: the percents of the
// revisions sharing a host sum to it.
const MaxTrafficPercent = 100

// ParseTrafficPercent parses a traffic percent as written ("10", " 90 "):
// an integer 0..100. The error says what is wanted (for
// FieldError.Allowed).
func ParseTrafficPercent(v string) (int32, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
	if err != nil || n < 0 || n > MaxTrafficPercent {
		return 0, errors.New("an integer 0..100")
	}
	return int32(n), nil
}

// ParseTrafficAnnotations sets spec.TrafficPercent and spec.Tag from
// AnnotationTrafficPercent and AnnotationTag when present (other
// annotations are ignored). Spaces around a value are dropped. It returns
// every problem joined, each a *FieldError naming the annotation; the tag
// is checked against the hosts later, by Validate.
func ParseTrafficAnnotations(spec *Spec, annotations map[string]string) error {
	var errs []error
	if v, ok := annotations[AnnotationTrafficPercent]; ok {
		p, err := ParseTrafficPercent(v)
		if err != nil {
			errs = append(errs, &FieldError{Field: AnnotationTrafficPercent, Value: v, Allowed: err.Error()})
		} else {
			spec.TrafficPercent = &p
		}
	}
	if v, ok := annotations[AnnotationTag]; ok {
		spec.Tag = strings.TrimSpace(v)
		if msg := checkTag(spec.Tag); msg != "" {
			errs = append(errs, &FieldError{Field: AnnotationTag, Value: v, Allowed: msg})
		}
	}
	return errors.Join(errs...)
}

// TagHost returns the extra host a tagged revision gets: "<tag>-" before
// its first host that is not a wildcard, in normal form (NormalizeHost):
// tag "canary" with hosts [*.example.com, app.example.com] gives
// "canary-app.example.com". It returns "" without a tag or without such a
// host (Validate refuses a tag then). The rule keeps the tag host in the
// zone of the revision's host, so a wildcard certificate or DNS record for
// that zone ("*.example.com") covers it.
func (s *Spec) TagHost() string {
	if s.Tag == "" {
		return ""
	}
	for _, h := range s.Hosts {
		h = NormalizeHost(h)
		if !strings.HasPrefix(h, "*.") && h != "" {
			return s.Tag + "-" + h
		}
	}
	return ""
}

// checkTag returns "" for a valid tag ("" or a DNS label), else what is
// wanted.
func checkTag(tag string) string {
	if tag == "" {
		return ""
	}
	if msgs := validation.IsDNS1123Label(tag); len(msgs) > 0 {
		return "a DNS label (" + msgs[0] + ")"
	}
	return ""
}

// validateTraffic appends the traffic settings' problems to errs: a
// percent outside 0..100, a tag that is not a DNS label, a tag with no
// host to derive its host from, or a tag host that is invalid or one of
// the revision's own hosts.
func (s *Spec) validateTraffic(bad func(field string, value any, allowed string)) {
	if p := s.TrafficPercent; p != nil && (*p < 0 || *p > MaxTrafficPercent) {
		bad(FieldTrafficPercent, *p, "0..100")
	}
	if s.Tag == "" {
		return
	}
	if msg := checkTag(s.Tag); msg != "" {
		bad(FieldTag, s.Tag, msg)
		return
	}
	th := s.TagHost()
	label, _, _ := strings.Cut(th, ".")
	switch {
	case th == "":
		bad(FieldTag, s.Tag, "set only on a revision with a host that is not a wildcard (the tag host is <tag>-<first host>)")
	case checkHost(th) != "":
		bad(FieldTag, s.Tag, fmt.Sprintf("a tag whose host %q is a valid DNS name (%s)", th, checkHost(th)))
	case len(validation.IsDNS1123Label(label)) > 0:
		bad(FieldTag, s.Tag, fmt.Sprintf("a tag whose host %q is a valid DNS name (first label %s)", th, validation.IsDNS1123Label(label)[0]))
	case slices.ContainsFunc(s.Hosts, func(h string) bool { return NormalizeHost(h) == th }):
		bad(FieldTag, s.Tag, fmt.Sprintf("a tag whose host %q is not already one of the revision's hosts", th))
	}
}
