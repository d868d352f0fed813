package kube

import (
	"github.com/thaw-dev/thaw/api/v1alpha1"
	"github.com/thaw-dev/thaw/platform/revisionspec"
	"github.com/thaw-dev/thaw/revision"
)

// specFromRevision is revisionspec.FromRevision: the one conversion of a
// Revision's spec, shared with the Envoy Gateway hooks (egext).
func specFromRevision(defaults revision.Spec, lim revision.Limits, r *v1alpha1.Revision) (revision.Spec, error) {
	return revisionspec.FromRevision(defaults, lim, r)
}
