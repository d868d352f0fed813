// Package app wires thaw's components into one process: the revision
// registry, xDS server, activator and ext_proc server, stats sink,
// autoscaler, mode control and a platform (local processes or Kubernetes),
// with one gRPC server for Envoy and one admin HTTP server on loopback.
// cmd/thaw's `local` and `run` commands are thin shells around it.
package app
