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
	pol, errs := revision.CompileWake("spec.wake.", w)
	return pol, errors.Join(errs...)
}
