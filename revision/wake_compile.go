package revision

import (
	"errors"

	"github.com/thaw-dev/thaw/wake"
)

// CompileWake compiles a wake policy (wake.Compile) for one source of
// revisions and reports each *wake.FieldError as a *FieldError whose Field
// is prefix followed by the policy's field path: "spec.wake." for a
// Revision, "wake." for the local file, the annotation's name and ": " for
// a workload. Other errors are returned as they are. A nil or empty config
// gives a nil policy and no errors.
func CompileWake(prefix string, c *wake.Config) (*wake.Policy, []error) {
	pol, errs := wake.Compile(c)
	out := make([]error, 0, len(errs))
	for _, err := range errs {
		var fe *wake.FieldError
		if errors.As(err, &fe) {
			out = append(out, &FieldError{Field: prefix + fe.Field, Value: fe.Value, Allowed: fe.Allowed})
			continue
		}
		out = append(out, err)
	}
	return pol, out
}
