package state

// Early backends (docs/activator.md, *Cold starts without the endpoint
// ACK*): on revision routes whose cluster the module writes
// (RouteConfig.Cluster), a ready backend that this Envoy has not ACKed
// yet (BackendUpdate.Unconfirmed) takes requests through thaw's
// ORIGINAL_DST cluster, the backend's address in dynamic metadata that
// only filters write, instead of waiting for the ACK; the module's slots
// on it are the same either way.

// EarlyParam is the state stream's query parameter ("early=1") by which a
// module says it routes unconfirmed backends (BackendUpdate.Unconfirmed)
// through DstCluster. A stream without it never gets the field (a
// module built before it refuses unknown fields) nor an unconfirmed
// backend.
const EarlyParam = "early"

// DstCluster is thaw's ORIGINAL_DST cluster (xds/translate
// ActivatorDstClusterName): it takes its destination only from dynamic
// metadata DstMetadataNamespace / DstMetadataKey ("ip:port"), never from
// a request header.
const DstCluster = "thaw_activator_dst"

// DstMetadataNamespace and DstMetadataKey name the dynamic metadata that
// DstCluster reads its destination from (xds/translate MetadataNamespace
// and MetadataDestinationKey).
const (
	DstMetadataNamespace = "thaw.activator"
	DstMetadataKey       = "destination"
)

// Early reports whether this Envoy has not ACKed b yet: a request that
// took a slot on it goes through DstCluster (its address in dynamic
// metadata), not pinned on the revision's cluster, which does not list
// it. The slot is b's either way.
func (b *Backend) Early() bool { return b.early.Load() }

// Confirmed returns how many of the revision's backends this Envoy ACKed
// (those not Early): its cluster lists at least these.
func (r *Revision) Confirmed() int { return int(r.confirmed.Load()) }

// StartEarly counts a request that holds a slot and goes through
// DstCluster; EndEarly when it ends (before Release).
func (r *Revision) StartEarly() {
	r.early.Add(1)
	r.markActive() // already listed by its slot; ReportIdle keeps it listed
	if !r.earlyQuiet.Load() {
		r.earlyQuiet.Store(true)
	}
}

// EndEarly ends a request counted by StartEarly.
func (r *Revision) EndEarly() { r.early.Add(-1) }

// EarlyInFlight returns the requests in flight through DstCluster.
func (r *Revision) EarlyInFlight() int64 { return r.early.Load() }

// PinnedOnCluster notes a request pinned on the revision's own cluster
// (set_upstream_override_host): Envoy's stats now carry the revision, so
// ReportIdle no longer needs to. One atomic load on the hot path.
func (r *Revision) PinnedOnCluster() {
	if r.earlyQuiet.Load() {
		r.earlyQuiet.Store(false)
	}
}

// ReportIdle reports whether the module must keep reporting the
// revision's counts, zeros included, every report interval while it is
// idle: it took requests through DstCluster since it last had no backend,
// none was pinned on its cluster since, and it still has backends.
//
// Why: Envoy's stats sink sends only the stats that were written, and a
// request through DstCluster writes none of the revision's cluster. A
// revision woken and served only through DstCluster is then in no
// Envoy's stats, and once the module stops reporting it the autoscaler
// has no data for it: it never scales on missing data, so the revision
// would stay up forever (the ext_proc hold path's zero reports, extproc
// ReportHoldPath, exist for the same reason). It stops when an update
// leaves the revision without backends, or at the first request pinned
// on its cluster, whose stats Envoy sends from then on.
func (r *Revision) ReportIdle() bool {
	return r.earlyQuiet.Load() && len(*r.backends.Load()) > 0
}

// CountsEarly is Counts with each revision's EarlyInFlight and
// ReportIdle.
func (t *Table) CountsEarly(fn func(key string, held, inFlight, early int64, reportIdle bool)) {
	t.each(func(k string, r *Revision) {
		fn(k, r.held.Load(), r.inFlight.Load(), r.early.Load(), r.ReportIdle())
	})
}

// JustConfirmed reports whether the last update that listed b is the one
// that confirmed it (it was Early before): thaw knows it ready and this
// Envoy ACKed it, but a worker's view of the cluster can still lag the
// ACK, so a request that finds b missing there may still go through
// DstCluster rather than wait for an update that will not come.
func (b *Backend) JustConfirmed() bool { return b.fresh.Load() }
