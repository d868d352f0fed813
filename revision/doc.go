// Package revision is thaw's shared domain model and the single writer of
// revision state.
//
// A revision is one scalable workload version: a scale target, its routing
// (hosts, port, and optionally a traffic percent and tag for hosts it
// shares with other revisions) and an autoscaling Spec. A Split (split.go)
// names hosts split by percent between revisions (a RevisionSplit with
// hosts); the Registry publishes it in Snapshot.Splits, checked against the
// revisions. Platforms (platform/kube,
// platform/local) parse configuration into Specs with ParseSettings and feed
// backends into the Registry; the xds, activator and autoscaler packages read
// immutable Snapshots from it and wait on its change channel. Spec defaults
// and bounds follow Knative Serving's autoscaler configuration.
package revision
