package kube

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/thaw-dev/thaw/revision"
)

// Annotations read and written on workloads.
const (
	// AnnotationHosts marks a workload as a thaw revision and lists the HTTP
	// hosts Envoy routes to it, comma-separated ("hello.example.com,hello").
	AnnotationHosts = "thaw.dev/hosts"
	// AnnotationPort is the backends' HTTP port (1..65535). Without it the
	// first container port of the pod template is used, and without that
	// the first container port of each pod.
	AnnotationPort = "thaw.dev/port"
	// AnnotationStatus is written by the leader: a JSON summary
	// {"mode":"serve|proxy","desired":N,"ready":N} of the revision, for
	// `kubectl get -o yaml` readers. thaw never reads it back as input.
	AnnotationStatus = "thaw.dev/status"
)

// thawAnnotationPrefix covers AnnotationHosts, AnnotationPort and
// AnnotationStatus.
const thawAnnotationPrefix = "thaw.dev/"

// keepAnnotation reports whether the informer transform keeps an annotation:
// only thaw's own and the autoscaling settings are read.
func keepAnnotation(k string) bool {
	return strings.HasPrefix(k, thawAnnotationPrefix) ||
		strings.HasPrefix(k, revision.ThawPrefix) ||
		strings.HasPrefix(k, revision.KnativePrefix)
}

// isRevision reports whether a workload with these annotations is a thaw
// revision (carries thaw.dev/hosts, even if empty or invalid).
func isRevision(annotations map[string]string) bool {
	_, ok := annotations[AnnotationHosts]
	return ok
}

// parseSpec builds a revision Spec from a workload's annotations and its pod
// template. defaults supplies every setting not given. The error joins every
// problem; each is a *revision.FieldError naming the annotation as written
// and the allowed values, and wraps revision.ErrInvalidSpec.
func parseSpec(defaults revision.Spec, lim revision.Limits, annotations map[string]string, template *corev1.PodSpec) (revision.Spec, error) {
	base := defaults
	base.Hosts = parseHosts(annotations[AnnotationHosts])
	var errs []error
	port, err := parsePort(annotations, template)
	if err != nil {
		errs = append(errs, err)
	}
	base.Port = port
	if proto := portProtocol(template, port); proto != "" {
		base.Protocol = proto // the protocol setting, when given, wins
	}
	if err := revision.ParseTrafficAnnotations(&base, annotations); err != nil {
		errs = append(errs, err)
	}

	settings := make(map[string]string, len(annotations))
	for k, v := range annotations {
		if strings.HasPrefix(k, revision.ThawPrefix) || strings.HasPrefix(k, revision.KnativePrefix) {
			settings[k] = v
		}
	}
	spec, err := revision.ParseSettingsWithin(base, settings, lim)
	if err != nil {
		errs = append(errs, renameHosts(err))
	}
	if spec.Wake, err = wakeFromAnnotation(annotations); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return spec, errors.Join(errs...)
	}
	return spec, nil
}

// parseHosts splits a comma-separated host list, trimming spaces and
// dropping empty items. revision.ParseSettings puts the names in normal form
// (lower case, no port, no trailing dot).
func parseHosts(v string) []string {
	var hosts []string
	for h := range strings.SplitSeq(v, ",") {
		h = strings.TrimSpace(h)
		if h != "" {
			hosts = append(hosts, h)
		}
	}
	return hosts
}

// parsePort returns the thaw.dev/port annotation, or the first container
// port of the pod template, or 0 (per-pod ports) when the template has none.
func parsePort(annotations map[string]string, template *corev1.PodSpec) (int32, error) {
	if v, ok := annotations[AnnotationPort]; ok {
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
		if err != nil || n < 1 || n > 65535 {
			return 0, &revision.FieldError{Field: AnnotationPort, Value: v, Allowed: "a port number 1..65535"}
		}
		return int32(n), nil
	}
	if p := firstContainerPort(template); p > 0 {
		return p, nil
	}
	return 0, nil
}

// portProtocol returns the backend protocol a pod template declares for
// port (or for its first TCP port when port is 0) through the port's name:
// revision.ProtocolH2C for "h2c", "grpc" or "http2" (alone or before a
// "-suffix"), the names Knative and service meshes read;
// revision.ProtocolHTTP1 for "http" or "http1"; "" when the template says
// nothing. (A container port has no appProtocol field: that exists only on
// Service ports, which thaw does not need.)
func portProtocol(spec *corev1.PodSpec, port int32) revision.Protocol {
	if spec == nil {
		return ""
	}
	for _, c := range spec.Containers {
		for _, p := range c.Ports {
			if p.Protocol != "" && p.Protocol != corev1.ProtocolTCP {
				continue
			}
			if port != 0 && p.ContainerPort != port {
				continue
			}
			name, _, _ := strings.Cut(strings.ToLower(p.Name), "-")
			switch name {
			case "h2c", "grpc", "http2":
				return revision.ProtocolH2C
			case "http", "http1":
				return revision.ProtocolHTTP1
			}
			return ""
		}
	}
	return ""
}

// firstContainerPort returns the first TCP container port of a pod spec, or
// 0.
func firstContainerPort(spec *corev1.PodSpec) int32 {
	if spec == nil {
		return 0
	}
	for _, c := range spec.Containers {
		for _, p := range c.Ports {
			if p.ContainerPort > 0 && (p.Protocol == "" || p.Protocol == corev1.ProtocolTCP) {
				return p.ContainerPort
			}
		}
	}
	return 0
}

// renameHosts makes the "hosts" field of Spec.Validate name the annotation
// the user wrote.
func renameHosts(err error) error {
	var out []error
	for _, e := range unjoin(err) {
		var fe *revision.FieldError
		if errors.As(e, &fe) && fe.Field == "hosts" {
			fe.Field = AnnotationHosts
		}
		out = append(out, e)
	}
	return errors.Join(out...)
}

// unjoin returns the errors inside an errors.Join result, or err itself.
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// fieldsOf lists the fields named by a parse error, for metrics and events.
func fieldsOf(err error) []string {
	var fields []string
	for _, e := range unjoin(err) {
		for _, inner := range unjoin(e) {
			var fe *revision.FieldError
			if errors.As(inner, &fe) {
				fields = append(fields, fe.Field)
			}
		}
	}
	return fields
}

// describeError renders a parse error on one line for an Event message.
func describeError(err error) string {
	var parts []string
	for _, e := range unjoin(err) {
		for _, inner := range unjoin(e) {
			parts = append(parts, inner.Error())
		}
	}
	return fmt.Sprintf("invalid thaw configuration: %s", strings.Join(parts, "; "))
}
