// Package xds is thaw's xDS control plane: the Server follows the revision
// registry, translates each snapshot into Envoy resources, serves them over
// delta and state-of-the-world ADS (and per-cluster EDS) with
// go-control-plane, and reports per revision whether every connected Envoy
// confirmed its current ClusterLoadAssignment, so a mode flip is ACKed
// everywhere before a revision scales to zero.
//
// The jobs live in subpackages, lowest first:
//
//   - xds/encoded: a resource as its deterministic encoding and
//     content-hash version, the shape the memo and the caches share;
//   - xds/translate: the pure translator (Config, Translate, one builder
//     file per resource kind, golden files);
//   - xds/memo: the incremental Translator the Server keeps (checked
//     against translate.Translate);
//   - xds/cache: the delta cache (O(changed) delta watches, inner
//     LinearCache for state of the world) and the startup Gate;
//   - xds/ack: per-stream ACK/NACK tracking and stalled-stream detection;
//   - xds/ondemand: virtual hosts on demand (OnDemandHosts): the Host
//     index with Envoy's domain rules and which hosts are resident
//     (wired in ondemand.go).
//
// This package wires them (server.go, callbacks.go) and holds what needs
// all of them. One goroutine (Run) follows the registry. It never answers
// a stream before the first Synced snapshot is in the caches (cache.Gate
// parks early watches). Later snapshots are applied by diff (apply.go,
// change.go): unchanged resources keep their pointers, so a flip rebuilds
// and sends one ClusterLoadAssignment. Order is make-before-break:
// clusters and endpoints, then (after new ones are ACKed, bounded by
// Config.StageTimeout) listeners and routes, then (after the routes are
// ACKed) removals. Run never waits for a stage (stage.go): it finishes a
// staged apply from the ACK notifications, and meanwhile sends the
// endpoint-only changes of later snapshots (mode flips, backends) at
// once, so one slow or stopped Envoy never delays other revisions' flips;
// adds, removes and routing changes wait for the stage to end. Listeners
// and routes live in go-control-plane LinearCaches; endpoints, clusters
// and virtual hosts in cache.Delta caches.
//
// Confirmation (server.go, module_ack.go): ConfirmedEverywhere(key,
// generation) is true iff at least one Envoy is connected and every
// connected one has ACKed the revision's current ClusterLoadAssignment,
// built from Generation >= generation, with nothing newer in flight;
// ConfirmedBy answers for one node. NACKs are logged with Envoy's
// message, counted (thaw_xds_nacks_total{type}) and reported by Status
// and Nodes. Limits (limits.go, excluded.go) bound nodes and streams and
// close streams that leave a response unanswered past the ack timeout.
//
// Called by internal/app (wiring), cmd/thaw, egext, envoy, platform/kube
// and the e2e tests, which use the Server, its limits and NewResponseCodec.
package xds
