package autoscaler

import (
	"hash/maphash"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/utils/clock"

	"github.com/thaw-dev/thaw/revision"
)

// Algorithm is how the collector averages the per-second values of a window.
type Algorithm string

const (
	// AlgorithmLinear weighs every second of a window equally.
	AlgorithmLinear Algorithm = "linear"
	// AlgorithmWeightedExponential weighs the value of the second that is
	// a seconds older than the window's newest second by
	// DecayFloor^(a/n), n being the window length in seconds: the newest
	// second weighs 1 and a second one full window old weighs DecayFloor
	// (5%). The result is the weighted mean, so it stays within the range
	// of the per-second values. Knative offers the same choice; the decay
	// rule here is thaw's own.
	AlgorithmWeightedExponential Algorithm = "weighted-exponential"
)

// DecayFloor is the weight, relative to the newest second, of a second one
// full window old under AlgorithmWeightedExponential.
const DecayFloor = 0.05

// Collector defaults.
const (
	// DefaultSourceExpiry is how long a silent source's last concurrency
	// keeps counting (Envoy flushes stats every second; this rides over
	// jitter and short stalls).
	DefaultSourceExpiry = 5 * time.Second
	// MaxFutureSkew is how far ahead of the collector's clock a sample may
	// be stamped; later samples are dropped.
	MaxFutureSkew = 5 * time.Second
	// maxRingSeconds bounds a revision's ring (one bucket per second) even
	// if a caller asks for a longer stable window than Spec.Validate allows.
	maxRingSeconds = 2 * 3600
	shardCount     = 64
)

// CollectorOptions configures a Collector. Zero values take the defaults.
type CollectorOptions struct {
	// Clock stamps nothing: it only bounds how far in the future a sample
	// may lie (MaxFutureSkew) and drives Expire. Default: the real clock.
	Clock clock.PassiveClock
	// SourceExpiry is how long a source that stopped reporting keeps
	// contributing its last concurrency (DefaultSourceExpiry; rounded up to
	// whole seconds). After that it counts as gone.
	SourceExpiry time.Duration
	// Algorithm is the window averaging (default AlgorithmLinear).
	Algorithm Algorithm
	// Window is the initial per-revision history, in seconds of buckets
	// (default revision.DefaultStableWindow). A StableAndPanic call with a
	// longer stable window grows that revision's ring.
	Window time.Duration
	// Known reports whether a revision exists (the registry's current
	// snapshot). A sample of a revision the collector has no window for
	// creates one only when Known says yes; otherwise it is dropped and
	// counted (DroppedUnknown), so names a client invents cost nothing.
	// Nil: every revision is accepted (tests, benchmarks).
	Known func(revision.Key) bool
}

// Collector keeps, per revision, one bucket per second of concurrency and
// request count, fed by Record from several sources, and answers window
// averages with StableAndPanic. It is safe for concurrent use.
//
// The model: within one second, the concurrency samples of one source are
// averaged; a source that reported earlier but not in a given second counts
// with its last value while that is at most SourceExpiry old (gauges keep
// their value between flushes); the sources' values are summed. Request
// counts are deltas and are summed over samples and sources. A sample older
// than its source's newest second adds its requests but not its concurrency.
// Memory per revision is bounded: a ring of buckets sized by the longest
// stable window asked for, and sources that expired are dropped.
type Collector struct {
	clock     clock.PassiveClock
	expiry    int64 // seconds
	algorithm Algorithm
	window    int64 // initial ring seconds
	seed      maphash.Seed
	known     func(revision.Key) bool
	shards    [shardCount]shard
	dropped   atomic.Uint64
	unknown   atomic.Uint64
	// wakers are told when a dormant revision gets a sample or a new
	// series (dormant.go); copy on write.
	wakers atomic.Pointer[[]func(revision.Key)]
}

var _ Recorder = (*Collector)(nil)

type shard struct {
	mu sync.RWMutex
	m  map[revision.Key]*series
}

// NewCollector returns an empty Collector.
func NewCollector(opts CollectorOptions) *Collector {
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.SourceExpiry <= 0 {
		opts.SourceExpiry = DefaultSourceExpiry
	}
	if opts.Algorithm == "" {
		opts.Algorithm = AlgorithmLinear
	}
	if opts.Window <= 0 {
		opts.Window = revision.DefaultStableWindow
	}
	c := &Collector{
		clock:     opts.Clock,
		expiry:    ceilSeconds(opts.SourceExpiry),
		algorithm: opts.Algorithm,
		window:    ceilSeconds(opts.Window),
		seed:      maphash.MakeSeed(),
		known:     opts.Known,
	}
	for i := range c.shards {
		c.shards[i].m = map[revision.Key]*series{}
	}
	return c
}

// Record adds one sample. It never blocks for long (two short, mostly
// uncontended locks) and does not allocate once the revision and source are
// known. Negative, NaN and infinite values count as 0. Samples stamped more
// than MaxFutureSkew ahead of the clock, or older than the revision's ring,
// are dropped (see Dropped).
func (c *Collector) Record(s Sample) {
	if s.Time.After(c.clock.Now().Add(MaxFutureSkew)) {
		c.dropped.Add(1)
		return
	}
	var ref Ref
	switch c.recordRef(&ref, s.Revision, s.Time.Unix(), s.Source, clean(s.Concurrency), clean(s.Requests)) {
	case recordDropped:
		c.dropped.Add(1)
	case recordUnknown:
		c.unknown.Add(1)
	}
}

// Dropped returns how many samples Record has refused so far for their
// time (DroppedUnknown counts the others).
func (c *Collector) Dropped() uint64 { return c.dropped.Load() }

// DroppedUnknown returns how many samples Record has dropped because
// CollectorOptions.Known did not know their revision.
func (c *Collector) DroppedUnknown() uint64 { return c.unknown.Load() }

// Forget drops everything known about a revision.
func (c *Collector) Forget(key revision.Key) {
	sh := c.shard(key)
	sh.mu.Lock()
	if ser := sh.m[key]; ser != nil {
		ser.mu.Lock() // recordRef reads dropped under it
		ser.dropped.Store(true)
		ser.mu.Unlock()
	}
	delete(sh.m, key)
	sh.mu.Unlock()
}

// Expire drops revisions whose newest sample is older than their whole ring
// (no window can reach it any more). Record recreates them on the next
// sample. The multiscaler calls it periodically.
func (c *Collector) Expire(now time.Time) {
	nowSec := now.Unix()
	for i := range c.shards {
		sh := &c.shards[i]
		sh.mu.Lock()
		for k, ser := range sh.m {
			ser.mu.Lock()
			stale := !ser.hasData || nowSec-ser.last > int64(len(ser.ring))
			if stale {
				ser.dropped.Store(true) // under ser.mu: recordRef reads it there
			}
			ser.mu.Unlock()
			if stale {
				delete(sh.m, k)
			}
		}
		sh.mu.Unlock()
	}
}

func (c *Collector) shard(key revision.Key) *shard {
	h := maphash.String(c.seed, key.Namespace)*31 + maphash.String(c.seed, key.Name)
	return &c.shards[h%shardCount]
}

// series returns the revision's series, creating it when create is set
// and Known accepts the revision; nil otherwise.
func (c *Collector) series(key revision.Key, create bool) *series {
	sh := c.shard(key)
	sh.mu.RLock()
	ser := sh.m[key]
	sh.mu.RUnlock()
	if ser != nil || !create {
		return ser
	}
	if c.known != nil && !c.known(key) {
		return nil
	}
	sh.mu.Lock()
	created := false
	if ser = sh.m[key]; ser == nil {
		ser = &series{ring: newRing(c.window + c.expiry + 2), sources: map[string]*source{}, activeUntil: math.MinInt64}
		sh.m[key] = ser
		created = true
	}
	sh.mu.Unlock()
	if created {
		// A dormant revision watches its series; one without a series
		// (never had data, or expired) is woken by its creation.
		c.wakeAll(key)
	}
	return ser
}
