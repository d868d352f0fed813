// Package harness starts the real components e2e tests run against: Envoy
// processes (envoy.go), a Kubernetes control plane with kwok nodes and a pod
// runner (cluster*.go, podrunner*.go). Every process is started by the test
// that needs it, bound to loopback, and stopped by pid in t.Cleanup (a
// `thaw local` the test killed leaves its Envoy and backends running, as
// after a crash: the cleanup stops them from thaw's state directory,
// thaw_leftovers.go); logs are printed when the test fails. Test-only: never import it from
// production code.
package harness
