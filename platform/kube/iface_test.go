package kube_test

import (
	"github.com/thaw-dev/thaw/internal/app"
	"github.com/thaw-dev/thaw/platform/kube"
)

// The app wires these: keep them assignable.
var (
	_ app.Platform = (*kube.Platform)(nil)
	_ app.Elector  = (*kube.Elector)(nil)
)
