package autoscaler

import "errors"

// ErrNotFound is wrapped by ScaleTarget errors when the revision's scale
// target does not exist.
var ErrNotFound = errors.New("scale target not found")

// ErrNoData is returned by Collector.StableAndPanic when the stable window
// holds no sample for the revision, and carried by invalid decider Results.
// The autoscaler never changes a revision's scale on missing data.
var ErrNoData = errors.New("no metric data in the stable window")
