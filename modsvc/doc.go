// Package modsvc is thaw's side of the activator module
// (module/activator, loaded into Envoy): it streams each Envoy the state
// the module throttles with, and takes back the counts and pokes the
// module reports.
//
// State (GET /activator/v1/state?node=ID, one JSON state.Update per line):
// a full update on connect, then after every published registry change
// an incremental one with only the revisions whose state changed and the
// keys removed (incremental.go: at 100,000 revisions a full update is
// 6.6 MB). Each revision carries its hold timeout, queue depth and
// ready backends with this Envoy's share of each backend's container
// concurrency (Slots). Reports (POST /activator/v1/report, a JSON
// state.Report): held counts become autoscaler samples (source
// "module/<node>"; requests in flight are already counted by Envoy's own
// upstream_rq_active on the revision cluster the module routes to, so they
// are not added again), and pokes wake the autoscaler at once.
//
// With a Confirmer (xds.Server in thaw), a backend reaches a node's
// module only once that node ACKed the endpoints listing it: the module
// pins requests with a strict override host (see Confirmer). A stream's
// first update that would withhold such a backend waits for the ACK, up
// to Server.FirstUpdateWait: a module reconnecting after a thaw restart
// keeps its last state meanwhile instead of one with no backend.
//
// A module that asks (state.SeqParam) gets numbered updates and echoes
// the number of the last one it applied in its reports; the Server then
// knows which registry snapshot each module holds (LaggingModules), and
// xds removal first sends an update's added endpoints only once every
// such module holds the removal (applied.go).
//
// How a backend's capacity is split among N Envoys follows Knative's
// activators, which split each pod's container concurrency among
// themselves: see Slots.
package modsvc
