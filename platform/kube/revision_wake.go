package kube

import (
	"errors"

	"github.com/thaw-dev/thaw/revision"
	"github.com/thaw-dev/thaw/wake"
	"sigs.k8s.io/yaml"
)

// AnnotationWakePolicy holds a workload's wake policy as YAML or JSON, in
// the shape of the local file's wake: block and of a Revision's spec.wake.
const AnnotationWakePolicy = "wake.thaw.dev/policy"

// wakeFromAnnotation compiles the AnnotationWakePolicy annotation (nil when
// absent); problems are *revision.FieldError values naming the annotation.
func wakeFromAnnotation(annotations map[string]string) (*wake.Policy, error) {
	v, ok := annotations[AnnotationWakePolicy]
	if !ok {
		return nil, nil
	}
	var c wake.Config
	if err := yaml.UnmarshalStrict([]byte(v), &c); err != nil {
		return nil, &revision.FieldError{Field: AnnotationWakePolicy, Value: truncate(v, 64),
			Allowed: "a YAML or JSON wake policy (docs/configuration.md, \"Wake policy\"): " + err.Error()}
	}
	pol, errs := revision.CompileWake(AnnotationWakePolicy+": ", &c)
	return pol, errors.Join(errs...)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
