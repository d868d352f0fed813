// Package e2e holds end-to-end tests and their harness: real Envoy processes,
// a real Kubernetes control plane (etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler and kwok) on loopback, and a pod
// runner that serves HTTP on pod IPs. Tests start and stop only their own
// processes.
package e2e
