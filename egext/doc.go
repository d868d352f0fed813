// Package egext is thaw's Envoy Gateway (EG) extension server: it answers
// EG's EnvoyGatewayExtension gRPC hooks (EG's published proto package
// github.com/envoyproxy/gateway/proto/extension) for routes and clusters
// whose backendRef is a thaw Revision (thaw.dev/v1alpha1, kind Revision,
// listed in EG's extensionManager.backendResources), so EG's own Envoy
// routes to the revision with one hop and thaw only serves endpoints:
//
//   - PostClusterModify (Cluster) turns EG's cluster for the Revision into
//     an EDS cluster whose assignment rev_<ns>_<name> comes from thaw over
//     a non-ADS DELTA_GRPC config source (static cluster thaw_xds, initial
//     fetch timeout > 0), with alt_stat_name rev_<ns>_<name> so thaw's stats
//     sink maps its stats to the revision, and the same transport, load
//     balancing, circuit breakers and h2c options as a
//     revision cluster in thaw's own fleet (translate.ExternalRevisionCluster).
//   - PostRouteModify (Route) sets x-thaw-revision (after removing any
//     client copy), thaw's retry policy (activator failover) and a route
//     timeout that leaves room for the activator's hold.
//
// Both are pure functions of EG's input and the Revision carried in the
// request, so every thaw replica answers (no leader needed: a leader change
// never stalls EG's translation). Every result is validated (ValidateAll)
// before it is returned: a malformed result becomes a gRPC error to EG
// (which, with failOpen false, keeps its last good configuration), never a
// CDS update Envoy would reject whole. Bad input (an invalid Revision, two
// Revisions in one rule) is not a hook error, which would make EG v1.9
// skip its whole translation: the route answers 500 with the reason.
//
// A mode flip is then one ClusterLoadAssignment from thaw on that
// cluster's EDS stream: no EG re-translation, no Kubernetes write.
package egext
