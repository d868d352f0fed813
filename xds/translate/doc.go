// Package translate turns a revision registry snapshot into Envoy
// resources. It is pure: no I/O, no state kept between calls, no clock.
//
// Translate builds everything: listener thaw_http with route
// configuration thaw_http (one virtual host per revision, x-thaw-revision
// set after removing any client copy, 404 for unknown hosts; over VHDS,
// or inline with Config.InlineRoutes), one EDS cluster rev_<ns>_<name>
// and one ClusterLoadAssignment per revision (serve mode: ready
// backends; proxy mode: the internal listener thaw_activator), the
// internal listener thaw_activator (ext_proc, or the activator module
// with Config.Module, then a route to thaw_activator_dst) and the
// ORIGINAL_DST cluster thaw_activator_dst that takes its destination only
// from dynamic metadata written by ext_proc. Hosts that revisions share by
// traffic percent get a virtual host of weighted clusters
// (SplitVirtualHost); PlanRoutes decides which revision serves which host
// and leaves out host collisions and invalid splits. The snapshot's splits
// of thaw's own fleet (revision.Split, a RevisionSplit with hosts) get the
// same virtual host and take their hosts from revisions (PlanFleetRoutes,
// plan_fleet.go). With
// Config.IdleHoldPath a revision without any backend has no cluster and
// no ClusterLoadAssignment: its routes lead to the shared hold cluster
// thaw_hold and internal listener thaw_hold (hold.go), or, with
// Config.Module, every revision route takes its cluster from the header
// the module writes, so no route changes when a revision wakes or goes
// idle (idle_module.go).
//
// One file per resource kind: cluster.go, endpoint.go, listener.go,
// route.go, route_split.go, module.go, failover.go, protocols.go, hold.go,
// idle_module.go;
// external.go holds the pieces an Envoy whose ADS goes elsewhere (Envoy
// Gateway's) uses. Every builder validates its message (ValidateAll)
// before packing it. Parts are the sub-messages revisions share.
//
// Golden files: testdata/translate_*.yaml (TestTranslateGolden; rewrite
// them with `go test ./xds/translate -run TestTranslateGolden -update`).
//
// It does not memoise, diff or serve: xds/memo keeps a Translator across
// snapshots that gives the same resources incrementally, and the Server
// (package xds) serves them. Called by xds/memo, the Server, egext (Envoy
// Gateway hooks), envoy (bootstrap merging), platform/kube, cmd/thaw and
// internal/app, which build single resources or read Config.
package translate
