// Package control is thaw's mode control, the role Knative's PodAutoscaler
// reconciler plays: from the decider's latest result and a revision's ready
// backends it chooses serve or proxy mode, writes it to the revision
// registry (which the xds package pushes to Envoy), and tells the
// autoscaler since when proxy mode has been confirmed by every connected
// Envoy, which gates scale to zero. It also reports a wake-up that reached
// no ready backend within the activation timeout as the revision's wake
// failure (ActivationTimeout), so its held requests are answered at once.
package control
