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
	shards    [shardCount]shard
	dropped   atomic.Uint64
}

var _ Recorder = (*Collector)(nil)

type shard struct {
	mu sync.RWMutex
	m  map[revision.Key]*series
}

// series is one revision's history. Seconds are Unix seconds.
type series struct {
	mu      sync.Mutex
	ring    []bucket
	sources map[string]*source // lookup by name
	srcs    []*source          // the same sources, for iteration
	hasData bool
	first   int64 // oldest second of the current run of data
	last    int64 // newest second any source reported
}

type bucket struct {
	sec  int64
	conc float64 // sum over sources of their per-second average
	reqs float64 // sum of request deltas
}

type source struct {
	name string
	sec  int64   // newest second it reported
	sum  float64 // of its concurrency samples in sec
	n    float64
	avg  float64 // sum/n: what it contributes to bucket sec
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
	sec := s.Time.Unix()
	if s.Time.After(c.clock.Now().Add(MaxFutureSkew)) {
		c.dropped.Add(1)
		return
	}
	ser := c.series(s.Revision, true)
	ser.mu.Lock()
	if !ser.record(sec, s.Source, clean(s.Concurrency), clean(s.Requests), c.expiry, c.window) {
		c.dropped.Add(1)
	}
	ser.mu.Unlock()
}

// Dropped returns how many samples Record has refused so far.
func (c *Collector) Dropped() uint64 { return c.dropped.Load() }

// Forget drops everything known about a revision.
func (c *Collector) Forget(key revision.Key) {
	sh := c.shard(key)
	sh.mu.Lock()
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

func (c *Collector) series(key revision.Key, create bool) *series {
	sh := c.shard(key)
	sh.mu.RLock()
	ser := sh.m[key]
	sh.mu.RUnlock()
	if ser != nil || !create {
		return ser
	}
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if ser = sh.m[key]; ser == nil {
		ser = &series{ring: newRing(c.window + c.expiry + 2), sources: map[string]*source{}}
		sh.m[key] = ser
	}
	return ser
}

// record applies one sample; false when it was dropped as too old.
func (s *series) record(sec int64, name string, conc, reqs float64, expiry, window int64) bool {
	size := int64(len(s.ring))
	if !s.hasData || sec > s.last+size {
		// First data, or nothing for a whole ring: start a new run.
		s.hasData, s.first, s.last = true, sec, sec
		clear(s.sources)
		s.srcs = s.srcs[:0]
	}
	if sec <= s.last-size {
		return false
	}
	if sec > s.last {
		s.last = sec
		s.pruneSources(expiry)
	}
	if sec < s.first {
		s.first = sec
	}
	b := s.bucket(sec)
	if b == nil {
		return false
	}
	b.reqs += reqs
	src := s.sources[name]
	switch {
	case src == nil:
		if len(s.sources) >= maxSources {
			return true // requests counted; refuse unbounded source churn
		}
		src = &source{name: name, sec: sec, sum: conc, n: 1, avg: conc}
		s.sources[name] = src
		s.srcs = append(s.srcs, src)
		b.conc += conc
	case sec == src.sec:
		old := src.avg
		src.sum += conc
		src.n++
		src.avg = src.sum / src.n
		b.conc += src.avg - old
	case sec > src.sec:
		s.hold(src, sec-1, expiry)
		src.sec, src.sum, src.n, src.avg = sec, conc, 1, conc
		b.conc += conc
	}
	return true
}

// maxSources bounds the sources tracked per revision.
const maxSources = 1024

// hold writes src's last value into the seconds after its newest one, up
// to until and at most expiry seconds, where it did not report.
func (s *series) hold(src *source, until int64, expiry int64) {
	end := min(until, src.sec+expiry)
	for t := src.sec + 1; t <= end; t++ {
		if b := s.bucket(t); b != nil {
			b.conc += src.avg
		}
	}
}

// pruneSources drops sources whose last value cannot reach into the ring
// any more (its hold ended more than a ring ago). Sources are kept until
// then so a late sample is still recognised as out of order.
func (s *series) pruneSources(expiry int64) {
	keep := s.srcs[:0]
	for _, src := range s.srcs {
		if src.sec+expiry <= s.last-int64(len(s.ring)) {
			delete(s.sources, src.name)
			continue
		}
		keep = append(keep, src)
	}
	clear(s.srcs[len(keep):])
	s.srcs = keep
}

// bucket returns the bucket for sec, resetting a slot that holds an older
// second; nil when the slot holds a newer second (sec is out of the ring).
func (s *series) bucket(sec int64) *bucket {
	b := &s.ring[mod(sec, int64(len(s.ring)))]
	switch {
	case b.sec == sec:
		return b
	case b.sec < sec:
		*b = bucket{sec: sec}
		return b
	default:
		return nil
	}
}

// newRing returns n empty buckets; their second matches no real one.
func newRing(n int64) []bucket {
	r := make([]bucket, n)
	for i := range r {
		r[i].sec = math.MinInt64
	}
	return r
}

func mod(a, n int64) int64 {
	m := a % n
	if m < 0 {
		m += n
	}
	return m
}

func clean(v float64) float64 {
	if v > 0 && !math.IsInf(v, 1) {
		return v
	}
	return 0
}

func ceilSeconds(d time.Duration) int64 {
	s := int64((d + time.Second - 1) / time.Second)
	return max(s, 1)
}
