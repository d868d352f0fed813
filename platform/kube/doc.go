// Package kube is the Kubernetes platform: revisions from annotated
// Deployments and StatefulSets, backends from their ready Pods through shared
// informers, scaling through the /scale subresource, leader election for the
// decider and Events for decisions and configuration errors.
package kube
