package modsvc

import (
	"net"
	"strconv"

	"github.com/thaw-dev/thaw/module/state"
	"github.com/thaw-dev/thaw/revision"
)

// Slots returns the share of a backend's container concurrency cc that
// Envoy number index (0-based) of envoys gets for the backend at position
// backend in the revision's sorted backend list: cc/envoys each, and the
// remainder to envoys rotated by backend position, so the shares of one
// backend sum to exactly cc and the remainders spread over the fleet.
// cc 0 (unlimited) gives 0 (unlimited); a zero share gives -1 (this Envoy
// sends that backend nothing). envoys < 1 counts as 1.
func Slots(cc, envoys, index, backend int) int32 {
	if cc <= 0 {
		return 0
	}
	if envoys < 1 {
		envoys = 1
	}
	s := cc / envoys
	if (index+backend)%envoys < cc%envoys {
		s++
	}
	if s == 0 {
		return -1
	}
	return int32(s)
}

// Update translates a registry snapshot into the full state update for
// Envoy number index of envoys. Pure: revisions sorted by key, backends in
// the registry's order.
func Update(snap *revision.Snapshot, envoys, index int) *state.Update {
	u, _ := updateWith(snap, envoys, index, nil, false)
	return u
}

// updateWith is Update with each revision's backends restricted to those
// allowed(revision) lists (a nil set: all of them; allowed nil: all of
// every revision); with early, the others are listed too, marked
// state.BackendUpdate.Unconfirmed. withheld counts the ready backends
// not allowed, by revision key (nil when none). A backend's slots do not depend on which
// others are left out (its position in the ready list decides the
// remainder), so the shares of one backend never sum above its container
// concurrency.
func updateWith(snap *revision.Snapshot, envoys, index int, allowed func(*revision.Revision) map[string]bool, early bool) (u *state.Update, withheld map[revision.Key]int) {
	u = &state.Update{Full: true}
	for _, r := range snap.Sorted() {
		var allow map[string]bool
		if allowed != nil {
			allow = allowed(r)
		}
		ru, held := revisionUpdate(r, envoys, index, allow, early)
		if held > 0 {
			if withheld == nil {
				withheld = map[revision.Key]int{}
			}
			withheld[r.Key] = held
		}
		u.Revisions = append(u.Revisions, ru)
	}
	return u, withheld
}

// revisionUpdate is one revision's state for Envoy number index of
// envoys, its backends restricted to allow (nil: all ready ones), or with
// early the others listed as state.BackendUpdate.Unconfirmed; withheld
// counts the ready backends not allowed.
func revisionUpdate(r *revision.Revision, envoys, index int, allow map[string]bool, early bool) (ru state.RevisionUpdate, withheld int) {
	ru = state.RevisionUpdate{
		Key:           r.Key.String(),
		QueueDepth:    r.Spec.QueueDepth,
		HoldTimeoutMs: r.Spec.HoldTimeout.Milliseconds(),
		Wake:          r.Spec.Wake.HolderConfig(),
	}
	if ru.QueueDepth < 1 {
		ru.QueueDepth = revision.DefaultQueueDepth
	}
	if ru.HoldTimeoutMs < 1 {
		ru.HoldTimeoutMs = revision.DefaultHoldTimeout.Milliseconds()
	}
	ready := r.ReadyBackends()
	if f := r.WakeFailure; f != nil && len(ready) == 0 {
		ru.WakeFailure = &state.WakeFailure{Reason: f.Reason, Message: f.Message}
		if !f.RetryAt.IsZero() {
			ru.WakeFailure.RetryAtMs = f.RetryAt.UnixMilli()
		}
	}
	for i, b := range ready {
		addr := net.JoinHostPort(b.Address, strconv.Itoa(int(backendPort(b, r))))
		unconfirmed := allow != nil && !allow[addr]
		if unconfirmed {
			withheld++
			if !early {
				continue
			}
		}
		ru.Backends = append(ru.Backends, state.BackendUpdate{
			Addr:        addr,
			Slots:       Slots(r.Spec.ContainerConcurrency, envoys, index, i),
			Unconfirmed: unconfirmed,
		})
	}
	return ru, withheld
}

// backendPort is a backend's port: its own, else the revision's (the
// port Envoy's ClusterLoadAssignment uses for it, translate.ServeLoadAssignment).
func backendPort(b revision.Backend, r *revision.Revision) int32 {
	if b.Port == 0 {
		return r.Spec.Port
	}
	return b.Port
}
