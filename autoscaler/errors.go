package autoscaler

import "errors"

// ErrNotFound is wrapped by ScaleTarget errors when the revision's scale
// target does not exist.
var ErrNotFound = errors.New("scale target not found")
