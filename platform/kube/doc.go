// Package kube is the Kubernetes platform: revisions from annotated
// Deployments and StatefulSets, backends from their ready Pods through shared
// informers, scaling through the /scale subresource, leader election for the
// decider and Events for decisions and configuration errors.
//
// # Revisions
//
// A Deployment or StatefulSet is a revision when it carries the annotation
// thaw.dev/hosts (comma-separated host names). Its key is namespace/name.
// Autoscaling settings come from autoscaling.thaw.dev/<key> annotations, with
// Knative's autoscaling.knative.dev/<key> accepted as aliases (thaw's win),
// parsed by revision.ParseSettings onto Options.Defaults. The backend port
// is thaw.dev/port, else the first container port of the pod template, else
// each pod's first container port.
//
// A Deployment and a StatefulSet with the same namespace/name both annotated
// would claim one key: the one created first owns it (the Deployment on a
// tie), the other gets a KeyConflict Warning Event and is ignored while the
// owner exists.
//
// An invalid configuration makes the revision invalid in the registry
// (Envoy stops routing it), records an InvalidConfiguration Warning Event on
// the workload naming each annotation at fault and its allowed values, and
// counts thaw_kube_config_errors_total{field}; other revisions are
// untouched. A host (in revision.NormalizeHost form) that two workloads
// claim belongs to the one created first (the lower key on a tie); the
// other is invalid in the same way until the owner lets go of it.
//
// # Backends
//
// Backends are the Pods the workload controls (through its ReplicaSet for a
// Deployment; found with an informer index on owner references, so a pod
// event costs one revision's work) and its selector matches, that are
// Ready, not terminating and have an IP. Pods, not EndpointSlices: no Service per
// revision is needed and readiness is seen one controller hop earlier. The
// informers' transform keeps only the fields read, so memory grows slowly
// with cluster size.
//
// # Scale-down
//
// A terminating pod leaves the backends at once, so Envoy stops routing to
// it while its containers drain (preStop, SIGTERM, the grace period). The
// ReplicaSet controller chooses which pods a scale-down removes; with
// Options.Load, SetScale first writes each ready pod's requests in flight
// into its controller.kubernetes.io/pod-deletion-cost annotation (only
// changed values, at most Options.MaxDeletionCostPatches pods, busiest
// first), so idle pods go first. StatefulSets ignore the annotation.
//
// # Other autoscalers
//
// A workload that a HorizontalPodAutoscaler or (when KEDA's CRD is served)
// a KEDA ScaledObject also scales is left alone: its revision is invalid
// with ErrOtherAutoscaler naming them, and SetScale refuses to write its
// /scale (autoscalers.go, keda.go).
//
// # RevisionSplits
//
// With the RevisionSplit CRD served, the leader writes each split's status
// (Ready and why, observedGeneration, status.traffic) from the registry's
// view of the revisions it names, only when it changes, with a Warning
// Event per distinct problem (splits.go, split_status.go,
// split_reconcile.go). A RevisionSplit with spec.hosts splits those hosts
// in thaw's own fleet: the informer feeds it to the registry
// (revision.Split) and its status adds status.hosts and SplitConflict
// (split_fleet.go). A CRD installed after Run started is found by
// discovery every Options.SplitDiscoveryInterval. Revision and
// RevisionSplit statuses share conditions.go.
//
// # Writes and leadership
//
// Every thaw replica runs the informers. With Options.Elected, only the
// replica told SetLeader(true) writes: /scale patches and pod deletion
// costs (SetScale returns ErrNotLeader otherwise), Events (scale changes, mode flips, configuration
// errors) and the thaw.dev/status annotation (JSON Status, at most once per
// StatusInterval per workload). NewElector provides Lease-based election
// (client-go leaderelection).
package kube
