// Package envoy holds thaw's Envoy bootstrap (bootstrap.yaml, embedded) and
// renders it for one Envoy: node identity, where thaw's xDS, ext_proc and
// stats services listen, and the admin port. See DESIGN.md "The contract
// with Envoy".
//
// Inputs and outputs:
//   - RenderBootstrap turns BootstrapParams into bootstrap YAML, Validate
//     checks YAML against Envoy's protos, RenderSDS writes the SDS files of
//     mutual TLS (ClientTLS), and RenderEnvoyGatewayMerge renders the
//     bootstrap parts Envoy Gateway's EnvoyProxy merges in;
//   - HostLoads and ParseHostLoads read per-backend requests and
//     connections from Envoy's admin /clusters, Refusals and
//     RefusalCollector read its refusal counters from /stats (in the
//     background, for thaw's /metrics).
//
// Used by cmd/thaw (thaw local's own Envoy, envoy-bootstrap, certgen, the
// drain's load reads), platform/kube (the fleet's bootstrap) and the e2e
// tests.
package envoy
