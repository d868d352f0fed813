package autoscaler

import (
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// series is one revision's history. Seconds are Unix seconds.
type series struct {
	mu      sync.Mutex
	ring    []bucket
	sources map[string]*source // lookup by name
	srcs    []*source          // the same sources, for iteration
	hasData bool
	first   int64 // oldest second of the current run of data
	last    int64 // newest second any source reported
	// activeUntil bounds the seconds a nonzero value can reach: every
	// nonzero sample at second t raises it to t+expiry (a source's value
	// is held that long). A window that starts after it averages to zero,
	// which windows answers without reading the ring (most revisions are
	// idle).
	activeUntil int64
	// dropped is set when the collector forgets the series (Forget,
	// Expire): a decision loop that cached the pointer looks it up again.
	dropped atomic.Bool
	// watched is set while the revision is dormant (dormant.go): the next
	// sample recorded clears it and wakes the revision. Guarded by mu.
	watched bool
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
	idx  int     // position in series.srcs
}

// record applies one sample; false when it was dropped as too old. hint is
// the caller's guess of the source's index in srcs (checked by name, so any
// value is safe); record sets it to the source's index.
func (s *series) record(sec int64, name string, conc, reqs float64, expiry, window int64, hint *int) bool {
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
	if conc != 0 || reqs != 0 {
		s.activeUntil = max(s.activeUntil, sec+expiry)
	}
	b.reqs += reqs
	var src *source
	if h := *hint; h >= 0 && h < len(s.srcs) && s.srcs[h].name == name {
		src = s.srcs[h]
	} else if src = s.sources[name]; src != nil {
		*hint = src.idx
	}
	switch {
	case src == nil:
		if len(s.sources) >= maxSources {
			return true // requests counted; refuse unbounded source churn
		}
		src = &source{name: name, sec: sec, sum: conc, n: 1, avg: conc, idx: len(s.srcs)}
		s.sources[name] = src
		s.srcs = append(s.srcs, src)
		*hint = src.idx
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
		src.idx = len(keep)
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
