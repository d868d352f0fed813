// Package control is thaw's mode control, the role Knative's PodAutoscaler
// reconciler plays: from the decider's latest result and a revision's ready
// backends it chooses serve or proxy mode, writes it to the revision
// registry (which the xds package pushes to Envoy), and tells the
// autoscaler since when proxy mode has been confirmed by every connected
// Envoy, which gates scale to zero.
package control
