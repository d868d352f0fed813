package app

import (
	"context"

	"github.com/thaw-dev/thaw/autoscaler"
	"github.com/thaw-dev/thaw/revision"
)

// Platform is where revisions come from and how they scale: local processes
// (platform/local) or Kubernetes workloads (platform/kube).
type Platform interface {
	autoscaler.ScaleTarget
	// Run publishes revisions and backends into the registry it was built
	// with, calls Registry.SetSynced once its initial listing is complete,
	// and returns when ctx ends, after stopping what it started.
	Run(ctx context.Context) error
}

// Elector runs leader election. RunOrDie-style: it calls onStartedLeading
// with a context that ends when leadership is lost, and returns when ctx
// ends. thaw runs the autoscaler (decisions and scale patches) only while
// leading; without an Elector it always leads.
type Elector interface {
	Run(ctx context.Context, onStartedLeading func(ctx context.Context), onStoppedLeading func())
}

// revisionErrorer is implemented by platforms that know why a valid
// revision's backends fail (platform/local: a crash-looping process's exit
// status and stderr); Status shows it in the revision's row.
type revisionErrorer interface {
	RevisionError(key revision.Key) string
}
