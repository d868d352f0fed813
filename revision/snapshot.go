package revision

import (
	"sort"
)

// Revision is one revision's state as published in a Snapshot. It is
// immutable once published: readers must not modify it.
type Revision struct {
	Key  Key
	Spec Spec
	// Backends are sorted by address and port; only Ready ones take traffic.
	Backends []Backend
	// Mode says where Envoy sends this revision's traffic.
	Mode Mode
	// DesiredScale is the autoscaler's last decision (pods), or -1 before
	// the first one.
	DesiredScale int32
	// Generation increases whenever what Envoy needs to route this revision
	// changes (spec, backends or mode). The xds package reports per
	// generation whether every Envoy has acknowledged it.
	Generation uint64
	// ModeGeneration is the Generation at which Mode last changed (0 while
	// the revision has kept its initial proxy mode). A confirmation of
	// Mode is current only if it was for a Generation >= ModeGeneration.
	ModeGeneration uint64
	// WakeFailure, when set, says waking this revision clearly failed: the
	// platform's report (Registry.SetWakeFailure) or, when it has none,
	// mode control's activation timeout (Registry.SetActivationFailure);
	// read-only.
	WakeFailure *WakeFailure
}

// ReadyBackends returns the ready backends (a new slice).
func (r *Revision) ReadyBackends() []Backend {
	out := make([]Backend, 0, len(r.Backends))
	for _, b := range r.Backends {
		if b.Ready {
			out = append(out, b)
		}
	}
	return out
}

// Snapshot is the registry's whole state at one version. It is immutable:
// readers share it without locks.
type Snapshot struct {
	// Version increases with every published snapshot.
	Version uint64
	// Synced is true once every platform has finished its initial listing;
	// before that the state may be partial and must not be served to Envoy.
	Synced bool
	// Revisions holds the valid revisions.
	Revisions RevisionMap
	// Invalid holds revisions whose configuration was rejected, with why.
	Invalid map[Key]error
	// Splits are the traffic splits of thaw's own fleet by key, each with
	// its Err set (registry_split.go); nil when there are none.
	// SplitVersion is the Version that last changed them.
	Splits       map[Key]*Split
	SplitVersion uint64

	// origin and log are set by the Registry: the keys changed by each of
	// its last publications (see Changes).
	origin *Registry
	log    []changeSet
}

// Get returns the revision for key, or nil.
func (s *Snapshot) Get(key Key) *Revision {
	if s == nil {
		return nil
	}
	return s.Revisions.Get(key)
}

// Sorted returns the valid revisions ordered by namespace and name.
func (s *Snapshot) Sorted() []*Revision {
	out := make([]*Revision, 0, s.Revisions.Len())
	for _, r := range s.Revisions.All() {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return keyLess(out[i].Key, out[j].Key) })
	return out
}

func keyLess(a, b Key) bool {
	if a.Namespace != b.Namespace {
		return a.Namespace < b.Namespace
	}
	return a.Name < b.Name
}

func sortBackends(bs []Backend) {
	sort.Slice(bs, func(i, j int) bool {
		if bs[i].Address != bs[j].Address {
			return bs[i].Address < bs[j].Address
		}
		return bs[i].Port < bs[j].Port
	})
}
