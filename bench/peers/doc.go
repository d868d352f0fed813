// Package peers is what the benchmarks know of the proxies thaw is compared
// with, kept beside their pinned builds:
//
//   - keda/ and queue/ are the Go modules `make tools-peers`
//     (hack/build-peers.sh) builds the KEDA HTTP add-on's interceptor and
//     Knative's queue-proxy from; each pins its peer's version with a
//     `tool` line and a go.sum;
//   - keda.go sets up what the interceptor reads (a bare Kubernetes API with
//     minimal HTTPScaledObject and InterceptorRoute CRDs, crds.yaml, and the
//     backend's Service and EndpointSlice) and its environment;
//   - queue.go is the environment Knative gives queue-proxy;
//   - netns.go runs the scenario in user, network and mount namespaces of
//     its own, so the peers' fixed ports stay private;
//   - version.go names the binaries' versions for the report.
//
// The measurement itself, the peers scenario (`make bench-peers`, and its
// smoke run `make test-peers` in CI), is bench/scenarios' peers*.go: it
// starts thaw, the peers and a front Envoy through the same helpers as the
// other scenarios.
package peers
