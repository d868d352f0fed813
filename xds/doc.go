// Package xds is thaw's xDS control plane: it translates revision registry
// snapshots into Envoy resources, serves them over delta and
// state-of-the-world ADS with go-control-plane, and tracks per Envoy which
// versions were ACKed or NACKed so a mode flip can be confirmed by every
// Envoy before a revision scales to zero.
//
// Translation (Translate, translate.go and one builder file per resource
// kind) is pure: listener thaw_http with route configuration thaw_http (one
// virtual host per revision, x-thaw-revision set after removing any client
// copy, 404 for unknown hosts), one EDS cluster rev_<ns>_<name> and one
// ClusterLoadAssignment per revision (serve mode: ready backends; proxy
// mode: the internal listener thaw_activator), the internal listener
// thaw_activator (ext_proc, then a route to thaw_activator_dst) and the
// ORIGINAL_DST cluster thaw_activator_dst that takes its destination only
// from dynamic metadata written by ext_proc. Hosts that revisions share by
// traffic percent get a virtual host of weighted clusters, one per
// revision cluster, each setting its own x-thaw-revision
// (SplitVirtualHost); plan.go decides which revision serves which host
// and leaves out host collisions and invalid splits. Golden files:
// testdata/.
//
// Serving (Server): one goroutine (Run) follows the registry. It never
// answers a stream before the first Synced snapshot is in the caches
// (gatedCache parks early watches). Later snapshots are applied by diff:
// unchanged resources keep their pointers (the translator memoises per
// revision), so a flip rebuilds and sends one ClusterLoadAssignment. Order
// is make-before-break: clusters and endpoints, then (after new ones are
// ACKed, bounded by Config.StageTimeout) listeners and routes, then
// (after the routes are ACKed) removals. Run never waits for a stage
// (stage.go): it finishes a staged apply from the ACK notifications, and
// meanwhile sends the endpoint-only changes of later snapshots (mode
// flips, backends) at once, so one slow or stopped Envoy never delays
// other revisions' flips; adds, removes and routing changes wait for the
// stage to end. Listeners and routes live in
// go-control-plane LinearCaches; endpoints, clusters and virtual hosts
// (one or more per revision) in deltaCaches, which keep each resource's
// encoding and version once and answer delta watches in O(changed)
// instead of O(subscribed).
//
// ACK tracking (tracker.go, callbacks.go): per stream, the version (content
// hash, go-control-plane's delta version) of every resource sent, ACKed
// and NACKed. ConfirmedEverywhere(key, generation) is true iff at least one
// Envoy is connected and every connected one has ACKed the revision's
// current ClusterLoadAssignment, built from Generation >= generation, with
// nothing newer in flight. NACKs are logged with Envoy's message, counted
// (thaw_xds_nacks_total{type}) and reported by Status and Nodes.
package xds
