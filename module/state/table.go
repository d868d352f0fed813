package state

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// Table is the set of revisions one Envoy serves: one per process, shared
// by every Envoy worker thread and the goroutine that follows thaw's state
// stream. The request path never looks a revision up by key (a route's
// configuration holds its *Revision); only Envoy's per-route hook and the
// state stream do, under mu, in a plain map: adding a revision costs O(1)
// (a copy of the whole map per addition made a start with N revisions
// O(N²)), and a sync.Map's hash trie cost the per-route hook ~3 µs per
// route at 100,000 in cache misses plus ~400 B per revision (docs/scaling.md,
// *Idle revisions on the module*).
type Table struct {
	mu   sync.Mutex           // guards revs, n, all, defaults
	revs map[string]*Revision // entries are never deleted
	n    int                  // len(revs)
	// all lists revs in insertion order, appended under mu; entries below
	// a length read under mu never change (see each).
	all      []*Revision
	defaults RevisionUpdate
	// defaultLimits is defaults as the limits of a revision added before
	// its first update, shared by all of them (limits are never written
	// once stored); under mu.
	defaultLimits *limits
	report        reportList // reportlist.go

	onPoke        atomic.Pointer[func(key string)]
	onHoldTimeout atomic.Pointer[func(HoldTimeout)] // holdtimeout.go

	// maxHeld bounds heldTotal (Update.MaxHeld; 0: none); heldLimited
	// counts refusals at the bound since TakeHeldLimited.
	maxHeld, heldTotal, heldLimited atomic.Int64
}

// ErrHeldLimit: the module already holds Update.MaxHeld requests over
// all revisions (Envoy's open-file budget); answered 503 + Retry-After,
// as the ext_proc activator's activator.ErrHeldLimit.
var ErrHeldLimit = errors.New("activator: too many requests held (Envoy's open-file limit)")

// reserveHeld takes one place under the held bound, lock-free; false at
// the bound (counted for TakeHeldLimited).
func (t *Table) reserveHeld() bool {
	for {
		n, m := t.heldTotal.Load(), t.maxHeld.Load()
		if m > 0 && n >= m {
			t.heldLimited.Add(1)
			return false
		}
		if t.heldTotal.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// HeldTotal returns the requests held now over all revisions.
func (t *Table) HeldTotal() int64 { return t.heldTotal.Load() }

// TakeHeldLimited returns the requests refused at the held bound since
// the previous call, and starts counting again from zero.
func (t *Table) TakeHeldLimited() int64 { return t.heldLimited.Swap(0) }

// SetOnPoke installs fn, called (outside every lock, on the calling
// thread: it must not block) when a revision without backends starts
// holding a request while none was held. Safe while requests run.
func (t *Table) SetOnPoke(fn func(key string)) { t.onPoke.Store(&fn) }

func (t *Table) poke(key string) {
	if fn := t.onPoke.Load(); fn != nil {
		(*fn)(key)
	}
}

// NewTable returns an empty table; revisions thaw has not described yet
// hold requests for holdTimeout, at most queueDepth at once.
func NewTable(holdTimeout time.Duration, queueDepth int) *Table {
	t := &Table{}
	t.SetDefaults(holdTimeout, queueDepth)
	return t
}

// SetDefaults changes the limits of revisions thaw has not described
// (those added later, and those an update removes).
func (t *Table) SetDefaults(holdTimeout time.Duration, queueDepth int) {
	t.mu.Lock()
	t.defaults = RevisionUpdate{QueueDepth: queueDepth, HoldTimeoutMs: holdTimeout.Milliseconds()}
	t.defaultLimits = &limits{queueDepth: queueDepth, holdTimeout: t.defaults.HoldTimeout()}
	t.mu.Unlock()
}

// Lookup returns the revision with key, or nil.
func (t *Table) Lookup(key string) *Revision {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.revs[key]
}

// each calls fn for every revision added before the call (one added
// meanwhile may or may not be seen). It walks t.all, not the sync.Map:
// the reporter walks every revision each report interval, and at 100,000
// revisions sync.Map.Range made that ~40 ms of CPU a second inside an
// idle Envoy (BenchmarkReportWalk100k; docs/scaling.md). The slice header
// is read under mu; an append past its length writes memory the walk
// never reads (or a new array), so the walk itself takes no lock.
func (t *Table) each(fn func(key string, r *Revision)) {
	t.mu.Lock()
	all := t.all
	t.mu.Unlock()
	for _, r := range all {
		fn(r.Key, r)
	}
}

// Revision returns the revision with key, adding it (unknown: no backends,
// the table's default limits) when missing. Keys come from route
// configuration, never from a client, and are bounded by MaxRevisions:
// past it, nil.
func (t *Table) Revision(key string) *Revision {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.revisionLocked(key)
}

// revisionLocked is Revision with t.mu held.
func (t *Table) revisionLocked(key string) *Revision {
	if r := t.revs[key]; r != nil {
		return r
	}
	if t.n >= MaxRevisions {
		return nil
	}
	r := newRevision(t, key)
	r.limits.Store(t.defaultLimits)
	if t.revs == nil {
		t.revs = map[string]*Revision{}
	}
	t.revs[key] = r
	t.all = append(t.all, r)
	t.n++
	return r
}

// Apply installs one update from thaw. Requests held by revisions that
// now have a free slot are granted in FIFO order; those of removed
// revisions keep waiting for their hold timeout (a removed revision may
// come back in the next message, and a request must not fail for a
// reordering). The error joins the wake policies that did not compile:
// those revisions run without a policy, everything else is installed.
func (t *Table) Apply(u *Update) error {
	if u.Full {
		t.maxHeld.Store(u.MaxHeld)
	}
	var errs []error
	listed := make(map[string]bool, len(u.Revisions))
	revs := t.revisionsOf(u) // table_batch.go
	for i := range u.Revisions {
		ru := &u.Revisions[i]
		listed[ru.Key] = true
		if r := revs[i]; r != nil {
			if err := r.set(ru); err != nil {
				errs = append(errs, err)
			}
		}
	}
	t.mu.Lock()
	d := t.defaults
	t.mu.Unlock()
	clear := func(r *Revision) {
		r.set(&RevisionUpdate{Key: r.Key, QueueDepth: d.QueueDepth, HoldTimeoutMs: d.HoldTimeoutMs})
	}
	for _, k := range u.Removed {
		if r := t.Lookup(k); r != nil && !listed[k] {
			clear(r)
		}
	}
	if u.Full {
		t.each(func(k string, r *Revision) {
			if !listed[k] {
				clear(r)
			}
		})
	}
	return errors.Join(errs...)
}

// Counts calls fn for every revision with its held and in-flight requests
// now. Revisions with nothing held or in flight are included: the caller
// keeps the zero that ends a revision's activity and skips later ones.
func (t *Table) Counts(fn func(key string, held, inFlight int64)) {
	t.each(func(k string, r *Revision) {
		fn(k, r.held.Load(), r.inFlight.Load())
	})
}
