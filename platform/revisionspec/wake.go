package revisionspec

import (
	"errors"

	"github.com/thaw-dev/thaw/revision"
	"github.com/thaw-dev/thaw/wake"
)

// wakeFromRevision compiles spec.wake (wake.Config is the field's type, so
// there is nothing to convert); each problem is a *revision.FieldError
// under "spec.wake." (a nil policy when unset).
func wakeFromRevision(w *wake.Config) (*wake.Policy, error) {
	if w == nil {
		return nil, nil
	}
	pol, errs := wake.Compile(w)
	out := make([]error, 0, len(errs))
	for _, err := range errs {
		var fe *wake.FieldError
		if errors.As(err, &fe) {
			out = append(out, &revision.FieldError{Field: "spec.wake." + fe.Field, Value: fe.Value, Allowed: fe.Allowed})
			continue
		}
		out = append(out, err)
	}
	return pol, errors.Join(out...)
}
