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
func (r *Revision) StartEarly() { r.early.Add(1) }

// EndEarly ends a request counted by StartEarly.
func (r *Revision) EndEarly() { r.early.Add(-1) }

// EarlyInFlight returns the requests in flight through DstCluster.
func (r *Revision) EarlyInFlight() int64 { return r.early.Load() }

// CountsEarly is Counts with each revision's EarlyInFlight.
func (t *Table) CountsEarly(fn func(key string, held, inFlight, early int64)) {
	t.each(func(k string, r *Revision) {
		fn(k, r.held.Load(), r.inFlight.Load(), r.early.Load())
	})
}

// JustConfirmed reports whether the last update that listed b is the one
// that confirmed it (it was Early before): thaw knows it ready and this
// Envoy ACKed it, but a worker's view of the cluster can still lag the
// ACK, so a request that finds b missing there may still go through
// DstCluster rather than wait for an update that will not come.
func (b *Backend) JustConfirmed() bool { return b.fresh.Load() }
