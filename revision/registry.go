package revision

import (
	"context"
	"maps"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
	"k8s.io/utils/clock"
)

// DefaultHoldoff is the holdoff thaw runs its registry with (thaw local and
// thaw run): long enough to batch a burst of changes into one snapshot,
// short against the 10 ms flip-to-ACK budget.
const DefaultHoldoff = 5 * time.Millisecond

// RegistryOptions configures a Registry.
type RegistryOptions struct {
	Logger *zap.Logger
	Clock  clock.Clock
	// Holdoff batches bursts of changes into one snapshot: a change is
	// published at most this long after it was made. 0 publishes every
	// change at once (tests).
	Holdoff time.Duration
}

// Registry is the single writer of revision state. Platforms and the
// autoscaler call its setters (cheap, never blocking on readers); Run
// publishes batched changes as immutable Snapshots. Readers call Snapshot and
// wait on Changed.
type Registry struct {
	opts RegistryOptions

	mu      sync.Mutex
	entries map[Key]*entry
	// pending holds the keys changed since the last publication.
	pending map[Key]struct{}
	synced  bool
	dirty   bool
	version uint64
	// generation is the last generation given to any entry: generations
	// are unique across the registry, so a revision deleted and created
	// again under the same key never repeats one (an Envoy's ACK of the old
	// revision never confirms the new one).
	generation uint64

	// splits are the traffic splits (registry_split.go); splitMembers
	// the revisions they name, splitsDirty set when one changed.
	splits       map[Key]*splitEntry
	splitMembers map[Key]struct{}
	splitsDirty  bool

	kick    chan struct{}
	current atomic.Pointer[published]
	// publishedAt is when the last snapshot was published (zero: never);
	// a revision's first ready backend publishes at once when it is at
	// least Holdoff ago (registry_wake.go).
	publishedAt time.Time
	// running is set while Run runs; firstDue while a first backend's
	// publication is scheduled (registry_wake.go).
	running, firstDue bool
}

type entry struct {
	spec       *Spec
	invalid    error
	backends   []Backend
	mode       Mode
	desired    int32
	generation uint64
	// created is the registry's generation counter when the entry was
	// created: a Revision with a Generation below it belongs to an earlier
	// entry of the same key.
	created uint64
	// modeGeneration is the generation at which mode last changed.
	modeGeneration uint64
	// wakeFailure is set by SetWakeFailure (nil: none), the platform's.
	wakeFailure *WakeFailure
	// activationFailure is set by SetActivationFailure (nil: none), mode
	// control's; published as WakeFailure when the platform reports none.
	activationFailure *WakeFailure
	cached            *Revision
}

type published struct {
	snap    *Snapshot
	changed chan struct{}
}

// NewRegistry returns an empty registry whose first snapshot (version 0) is
// empty and not Synced.
func NewRegistry(opts RegistryOptions) *Registry {
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	r := &Registry{opts: opts, entries: map[Key]*entry{}, pending: map[Key]struct{}{}, kick: make(chan struct{}, 1)}
	r.current.Store(&published{
		snap:    &Snapshot{Invalid: map[Key]error{}, origin: r},
		changed: make(chan struct{}),
	})
	return r
}

// Snapshot returns the latest published state. Never nil.
func (r *Registry) Snapshot() *Snapshot { return r.current.Load().snap }

// Changed returns a channel closed when a snapshot newer than the one
// Snapshot returned at the same moment is published. Take the channel first,
// then the snapshot, to never miss a change.
func (r *Registry) Changed() <-chan struct{} { return r.current.Load().changed }

// WaitFor blocks until cond holds for the latest snapshot and returns that
// snapshot, or returns ctx.Err().
func (r *Registry) WaitFor(ctx context.Context, cond func(*Snapshot) bool) (*Snapshot, error) {
	for {
		ch := r.Changed()
		if s := r.Snapshot(); cond(s) {
			return s, nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// Run publishes changes until ctx ends, waiting Holdoff after the first
// change of a batch. With Holdoff 0 setters publish themselves and Run only
// waits for ctx.
func (r *Registry) Run(ctx context.Context) {
	r.setRunning(true)
	defer r.setRunning(false)
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.kick:
		}
		if r.opts.Holdoff > 0 {
			t := r.opts.Clock.NewTimer(r.opts.Holdoff)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C():
			}
		}
		r.mu.Lock()
		r.publishLocked()
		r.mu.Unlock()
	}
}

// Upsert sets the spec of a valid revision, creating it if needed. A new
// revision starts in proxy mode with unknown desired scale (-1).
func (r *Registry) Upsert(key Key, spec Spec) {
	r.update(key, true, func(e *entry) bool {
		if e.spec != nil && e.invalid == nil && specEqual(e.spec, &spec) {
			return false
		}
		s := spec
		s.Hosts = slices.Clone(spec.Hosts)
		if p := spec.TrafficPercent; p != nil {
			v := *p // a copy: the caller may reuse its variable
			s.TrafficPercent = &v
		}
		e.spec, e.invalid = &s, nil
		return true
	})
}

// SetInvalid records that key's configuration was rejected; the revision
// leaves Revisions (Envoy stops routing it) and appears in Invalid. Setting
// the same error again (same message) publishes nothing: platforms call it
// on every reconcile of an invalid workload.
func (r *Registry) SetInvalid(key Key, err error) {
	r.update(key, true, func(e *entry) bool {
		if e.spec == nil && e.invalid != nil && sameError(e.invalid, err) {
			return false
		}
		e.spec, e.invalid = nil, err
		return true
	})
}

// sameError reports whether two validation errors say the same thing.
func sameError(a, b error) bool {
	return a == b || (a != nil && b != nil && a.Error() == b.Error())
}

// Delete removes a revision and its backends.
func (r *Registry) Delete(key Key) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.entries[key]; !ok {
		return
	}
	delete(r.entries, key)
	r.pending[key] = struct{}{}
	r.changedLocked()
}

// SetBackends replaces a revision's backends. Backends may arrive before the
// revision's spec; they are kept until it does.
func (r *Registry) SetBackends(key Key, backends []Backend) {
	bs := slices.Clone(backends)
	sortBackends(bs)
	first := false
	r.update(key, true, func(e *entry) bool {
		if slices.Equal(e.backends, bs) {
			return false
		}
		first = ReadyCount(e.backends) == 0 && ReadyCount(bs) > 0
		e.backends = bs
		return true
	})
	if first {
		r.publishFirstBackend()
	}
}

// SetMode sets where Envoy sends a revision's traffic and returns the mode
// it had before (set, published or not: the holdoff may delay publication).
// It never creates a revision: ok is false, and nothing is recorded, for an
// unknown key.
func (r *Registry) SetMode(key Key, mode Mode) (previous Mode, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e := r.entries[key]
	if e == nil {
		return ModeProxy, false
	}
	previous = e.mode
	if e.mode != mode {
		r.setModeLocked(e, mode)
		r.changedEntryLocked(key, e)
	}
	return previous, true
}

// SetDesiredScale records the autoscaler's decision (pods). It does not bump
// the revision's Generation: Envoy does not see it.
func (r *Registry) SetDesiredScale(key Key, desired int32) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e := r.entries[key]
	if e == nil || e.desired == desired {
		return
	}
	e.desired = desired
	r.changedEntryLocked(key, e)
}

// SetDecision records mode control's decision for basis, the revision as
// read from a snapshot: the mode, and the autoscaler's desired pods unless
// desired is nil, in one locked compare-and-set (one change to publish).
// Only a mode change bumps the revision's Generation. previous is the mode
// before the call (set, published or not). ok is false, and nothing is
// recorded, when basis's revision is gone: deleted, or deleted and created
// again under the same key since basis was read (the new revision's mode is
// decided from its own state, never inherited).
func (r *Registry) SetDecision(basis *Revision, desired *int32, mode Mode) (previous Mode, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e := r.entries[basis.Key]
	if e == nil || basis.Generation < e.created {
		return ModeProxy, false
	}
	previous = e.mode
	changed := false
	if desired != nil && e.desired != *desired {
		e.desired, changed = *desired, true
	}
	if e.mode != mode {
		r.setModeLocked(e, mode)
		changed = true
	}
	if changed {
		r.changedEntryLocked(basis.Key, e)
	}
	return previous, true
}

// setModeLocked sets e's mode and bumps its generation (Envoy sees it).
func (r *Registry) setModeLocked(e *entry, mode Mode) {
	e.mode = mode
	r.generation++
	e.generation = r.generation
	e.modeGeneration = e.generation
}

// changedEntryLocked queues e (key) for publication.
func (r *Registry) changedEntryLocked(key Key, e *entry) {
	e.cached = nil
	r.pending[key] = struct{}{}
	r.changedLocked()
}

// SetSynced marks the platforms' initial listing complete. From then on
// snapshots are Synced.
func (r *Registry) SetSynced() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.synced {
		return
	}
	r.synced = true
	r.changedLocked()
}

// update applies fn to key's entry under the lock; fn reports whether it
// changed anything Envoy sees (the generation is bumped then). A missing
// entry is created for fn when create is set, and kept only if fn changed
// it.
func (r *Registry) update(key Key, create bool, fn func(*entry) bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e := r.entries[key]
	if e == nil {
		if !create {
			return
		}
		e = &entry{desired: -1, created: r.generation + 1}
		if !fn(e) {
			return // nothing recorded: the new entry is dropped
		}
		r.entries[key] = e
	} else if !fn(e) {
		return
	}
	r.generation++
	e.generation = r.generation
	r.changedEntryLocked(key, e)
}

func (r *Registry) changedLocked() {
	r.dirty = true
	if r.opts.Holdoff == 0 {
		r.publishLocked()
		return
	}
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// publishLocked publishes the pending changes: only the changed keys are
// visited, and the new snapshot shares every unchanged part of the last one.
func (r *Registry) publishLocked() {
	if !r.dirty {
		return
	}
	r.dirty = false
	r.version++
	r.publishedAt = r.opts.Clock.Now()
	old := r.current.Load()
	prev := old.snap
	changes := make(map[Key]*Revision, len(r.pending))
	keys := make([]Key, 0, len(r.pending))
	invalid := prev.Invalid
	cloned := false
	for k := range r.pending {
		keys = append(keys, k)
		var rev *Revision
		var bad error
		if e := r.entries[k]; e != nil {
			switch {
			case e.invalid != nil:
				bad = e.invalid
			case e.spec != nil:
				if e.cached == nil {
					e.cached = &Revision{Key: k, Spec: *e.spec, Backends: e.backends, Mode: e.mode,
						DesiredScale: e.desired, Generation: e.generation, ModeGeneration: e.modeGeneration,
						WakeFailure: e.publishedWakeFailure()}
				}
				rev = e.cached
			}
		}
		changes[k] = rev
		if _, was := invalid[k]; was || bad != nil {
			if !cloned {
				invalid, cloned = maps.Clone(invalid), true
			}
			if bad != nil {
				invalid[k] = bad
			} else {
				delete(invalid, k)
			}
		}
	}
	r.pending = map[Key]struct{}{} // not cleared: a burst's large map is not kept
	log := prev.log
	if len(log) >= changeLogLen {
		log = log[len(log)-changeLogLen+1:]
	}
	revs := prev.Revisions.with(changes)
	splits, splitVersion := r.publishSplitsLocked(prev, keys, revs, invalid)
	snap := &Snapshot{
		Version:      r.version,
		Synced:       r.synced,
		Revisions:    revs,
		Invalid:      invalid,
		Splits:       splits,
		SplitVersion: splitVersion,
		origin:       r,
		log:          append(log, changeSet{version: r.version, keys: keys}),
	}
	r.current.Store(&published{snap: snap, changed: make(chan struct{})})
	close(old.changed)
}

func specEqual(a, b *Spec) bool {
	if !slices.Equal(a.Hosts, b.Hosts) {
		return false
	}
	return reflect.DeepEqual(a, b)
}
