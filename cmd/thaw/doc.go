// Command thaw is request-driven autoscaling with scale to zero for HTTP
// workloads, built as an extension of Envoy: an xDS control plane, an
// activator (ext_proc, or the dynamic module loaded into Envoy) and a KPA
// autoscaler in one binary.
//
// Subcommands:
//
//	local            revisions from a YAML file (-f), local processes as
//	                 backends, and an Envoy it starts itself (platform/local)
//	run              in a Kubernetes cluster: revisions from Revision objects
//	                 and annotated workloads (platform/kube), serving an
//	                 Envoy fleet or Envoy Gateway's extension hooks
//	status           a running thaw's revisions (admin /status), all or one
//	                 (thaw status namespace/name)
//	envoy-bootstrap  the bootstrap YAML that connects one Envoy to thaw
//	certgen          create or renew the certificates of mutual TLS between
//	                 Envoy and thaw
//	install-module   copy the activator module into a directory Envoy loads
//	                 it from
//	version          the build's version
//
// Inputs are flags (and, for local, the revisions file); each long-running
// subcommand serves gRPC (xDS, ext_proc, the stats sink), the admin HTTP
// endpoints (/metrics, /status, /healthz, /readyz) and JSON logs on stderr.
// The wiring of components lives in internal/app; this package holds the
// flags and the adapters between packages (local_drain.go, for example).
//
// `make build` builds it as bin/thaw; the container image (Dockerfile), the
// manifests under manifests/, the e2e tests (THAW_BIN) and the bench
// scenarios run that binary.
package main
