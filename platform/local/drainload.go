package local

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"go.uber.org/zap"
	"k8s.io/utils/clock"

	"github.com/thaw-dev/thaw/revision"
)

// maxLoadKeysPerRead bounds the revisions one Options.Load read names: the
// admin filter is an alternation of their cluster names in the URL, which
// must stay well under Envoy's request header limit (60 KiB).
const maxLoadKeysPerRead = 64

// drainLoads shares Options.Load among the draining instances: one read at
// a time for every revision being drained (at most maxLoadKeysPerRead
// each), reused by every poll within drainPoll of its start. Without it,
// each draining instance asked Envoy's admin on its own every poll: with
// many backends draining at once, the asks queued on Envoy's main thread
// (which also applies xDS updates) and, with a stopped Envoy, each waited
// its own timeout. A read is bounded by loadTimeout, whoever waits on it.
type drainLoads struct {
	src   LoadSource
	clock clock.PassiveClock
	log   *zap.Logger

	mu sync.Mutex
	// draining counts the instances draining per revision (watch).
	draining map[revision.Key]int
	// waiting counts the callers of get per revision that wait for a read
	// naming it: the next read names them first.
	waiting map[revision.Key]int
	// inflight is the read in progress, nil when none; recent are the
	// reads that ended, started within drainPoll (pruned as reads end).
	inflight *loadRead
	recent   []*loadRead
	// failing is true after a failed read, until one succeeds (one log
	// line per change).
	failing bool
}

// loadRead is one Options.Load call for the revisions in keys.
type loadRead struct {
	keys    map[revision.Key]bool
	started time.Time
	done    chan struct{} // closed once loads and err are set
	loads   map[string]BackendLoad
	err     error
}

func newDrainLoads(src LoadSource, clk clock.PassiveClock, log *zap.Logger) *drainLoads {
	return &drainLoads{src: src, clock: clk, log: log, draining: map[revision.Key]int{}, waiting: map[revision.Key]int{}}
}

// watch records an instance of key as draining until the returned func is
// called: later reads include key even when others started them.
func (d *drainLoads) watch(key revision.Key) (unwatch func()) {
	d.mu.Lock()
	d.draining[key]++
	d.mu.Unlock()
	return func() {
		d.mu.Lock()
		defer d.mu.Unlock()
		if d.draining[key]--; d.draining[key] <= 0 {
			delete(d.draining, key)
		}
	}
}

// get returns the load per backend address of revision key (and of every
// other draining revision) from a read that started less than drainPoll
// ago, waiting for the read in progress or starting one. Errors: the
// read's (Options.Load's, or its loadTimeout), or ctx's when ctx ends
// first; the read itself goes on for the other waiters.
func (d *drainLoads) get(ctx context.Context, key revision.Key) (map[string]BackendLoad, error) {
	d.mu.Lock()
	d.waiting[key]++
	d.mu.Unlock()
	defer func() {
		d.mu.Lock()
		defer d.mu.Unlock()
		if d.waiting[key]--; d.waiting[key] <= 0 {
			delete(d.waiting, key)
		}
	}()
	for {
		r, fresh := d.readFor(ctx, key)
		if !fresh {
			select {
			case <-r.done:
			case <-ctx.Done():
				return nil, fmt.Errorf("Envoy's load per backend: %w", ctx.Err())
			}
		}
		if r.keys[key] {
			return r.loads, r.err
		}
		// The read was started for other revisions: the next names key.
	}
}

// readFor returns a read that ended, started within drainPoll and named
// key (fresh); else the read in progress, started now if none was.
func (d *drainLoads) readFor(ctx context.Context, key revision.Key) (r *loadRead, fresh bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if r := d.freshLocked(key); r != nil {
		return r, true
	}
	if d.inflight == nil {
		d.startLocked(ctx, key)
	}
	return d.inflight, false
}

// freshLocked returns a read that ended, started within drainPoll and
// named key; nil when none did.
func (d *drainLoads) freshLocked(key revision.Key) *loadRead {
	for _, r := range d.recent {
		if r.keys[key] && d.clock.Since(r.started) < drainPoll {
			return r
		}
	}
	return nil
}

// startLocked starts a read naming key, the revisions other callers wait
// for, then the other draining revisions (up to maxLoadKeysPerRead in
// all; none with a fresh answer already). The read is bounded by
// loadTimeout and not cancelled when ctx ends (other instances may be
// waiting on it).
func (d *drainLoads) startLocked(ctx context.Context, key revision.Key) {
	r := &loadRead{keys: map[revision.Key]bool{key: true}, started: d.clock.Now(), done: make(chan struct{})}
	keys := []revision.Key{key}
	for _, from := range []map[revision.Key]int{d.waiting, d.draining} {
		for k := range from {
			if len(keys) >= maxLoadKeysPerRead {
				break
			}
			if !r.keys[k] && d.freshLocked(k) == nil {
				r.keys[k] = true
				keys = append(keys, k)
			}
		}
	}
	d.inflight = r
	go func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), loadTimeout)
		loads, err := d.src.Load(rctx, keys...)
		cancel()
		r.loads, r.err = loads, err
		if err != nil {
			r.err = fmt.Errorf("Envoy's load per backend of %d draining revisions (read timeout %s): %w", len(keys), loadTimeout, err)
		}
		d.mu.Lock()
		d.inflight = nil
		d.recent = append(slices.DeleteFunc(d.recent, func(o *loadRead) bool {
			return d.clock.Since(o.started) >= drainPoll
		}), r)
		wasFailing := d.failing
		d.failing = err != nil
		d.mu.Unlock()
		// Logged before the waiters see the answer, so a caller that got
		// it finds the line already written.
		switch {
		case err != nil && !wasFailing:
			d.log.Warn("Envoy's load per backend unknown; draining backends count every connection as busy until it answers",
				zap.Duration("readTimeout", loadTimeout), zap.Int("revisions", len(keys)), zap.Error(err))
		case err == nil && wasFailing:
			d.log.Info("Envoy's load per backend readable again", zap.Int("revisions", len(keys)))
		}
		close(r.done)
	}()
}
