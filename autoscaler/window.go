package autoscaler

import (
	"math"
	"time"

	"github.com/thaw-dev/thaw/revision"
)

// WindowStats are one revision's window averages, summed over sources.
// Concurrency is in requests in flight, RPS in requests per second.
type WindowStats struct {
	StableConcurrency float64
	PanicConcurrency  float64
	StableRPS         float64
	PanicRPS          float64
}

// StableAndPanic returns the averages of the stable and the panic window
// ending at now (both rounded up to whole seconds; the panic window is at
// most the stable one).
//
// A window covers the last `window` seconds up to now's second, or up to
// the second before when no source has reported for now's second yet (a
// report may still be in flight), clipped to the current run of data: it
// starts no earlier than the revision's first sample (a new revision is
// not diluted by the time before it existed) and ends at the newest second
// any source reported (silence at the end is missing data, not idleness).
// Seconds inside that range without data count as 0. It
// returns ErrNoData when the clipped stable window is empty; a panic window
// that is empty while the stable one is not averages to 0.
func (c *Collector) StableAndPanic(key revision.Key, now time.Time, stableWindow, panicWindow time.Duration) (WindowStats, error) {
	ser := c.series(key, false)
	if ser == nil {
		return WindowStats{}, ErrNoData
	}
	return c.windowsOf(ser, now, stableWindow, panicWindow)
}

// stableAndPanicCached is StableAndPanic for a decision loop that keeps
// the revision's series in *cached: the collector's map is read only when
// nothing is cached yet or the cached series was dropped (Forget, Expire).
// At 100,000 revisions that map lookup was a tenth of a tick.
func (c *Collector) stableAndPanicCached(cached **series, key revision.Key, now time.Time, stableWindow, panicWindow time.Duration) (WindowStats, error) {
	ser := *cached
	if ser == nil || ser.dropped.Load() {
		ser = c.series(key, false)
		*cached = ser
		if ser == nil {
			return WindowStats{}, ErrNoData
		}
	}
	return c.windowsOf(ser, now, stableWindow, panicWindow)
}

// windowsOf computes one series' windows (see StableAndPanic).
func (c *Collector) windowsOf(ser *series, now time.Time, stableWindow, panicWindow time.Duration) (WindowStats, error) {
	ns := min(ceilSeconds(stableWindow), maxRingSeconds)
	np := min(ceilSeconds(panicWindow), ns)
	ser.mu.Lock()
	defer ser.mu.Unlock()
	if need := ns + c.expiry + 2; need > int64(len(ser.ring)) {
		ser.grow(need)
	}
	return ser.windows(now.Unix(), ns, np, c.expiry, c.algorithm)
}

// accum sums weighted per-second values of one window.
type accum struct{ conc, reqs, weight float64 }

func (a accum) stats() (conc, rps float64) {
	if a.weight == 0 {
		return 0, 0
	}
	return a.conc / a.weight, a.reqs / a.weight
}

func (s *series) windows(nowSec, ns, np, expiry int64, alg Algorithm) (WindowStats, error) {
	if !s.hasData {
		return WindowStats{}, ErrNoData
	}
	ref := nowSec
	if s.last < nowSec {
		ref-- // the current second may still be in flight
	}
	end := min(ref, s.last)
	sStart := max(ref-ns+1, s.first)
	pStart := max(ref-np+1, s.first)
	if end < sStart {
		return WindowStats{}, ErrNoData
	}
	if s.activeUntil < sStart {
		return WindowStats{}, nil // every second of both windows is 0
	}
	dS, dP := 1.0, 1.0
	if alg == AlgorithmWeightedExponential {
		dS = math.Pow(DecayFloor, 1/float64(ns))
		dP = math.Pow(DecayFloor, 1/float64(np))
	}
	var st, pa accum
	size := int64(len(s.ring))
	wS, wP := 1.0, 1.0
	i := mod(end, size)
	for t := end; t >= sStart; t-- {
		var conc, reqs float64
		if b := &s.ring[i]; b.sec == t {
			conc, reqs = b.conc, b.reqs
		}
		if i--; i < 0 {
			i = size - 1
		}
		st.conc += wS * conc
		st.reqs += wS * reqs
		st.weight += wS
		if t >= pStart {
			pa.conc += wP * conc
			pa.reqs += wP * reqs
			pa.weight += wP
		}
		wS *= dS
		wP *= dP
	}
	// Sources silent since their newest second still count with their last
	// value for up to expiry seconds.
	for _, src := range s.srcs {
		lo := max(src.sec+1, sStart)
		hi := min(src.sec+expiry, end)
		if lo > hi {
			continue
		}
		wS, wP := 1.0, 1.0
		if alg == AlgorithmWeightedExponential {
			wS = math.Pow(dS, float64(end-hi))
			wP = math.Pow(dP, float64(end-hi))
		}
		for t := hi; t >= lo; t-- {
			st.conc += wS * src.avg
			if t >= pStart {
				pa.conc += wP * src.avg
			}
			wS *= dS
			wP *= dP
		}
	}
	var out WindowStats
	out.StableConcurrency, out.StableRPS = st.stats()
	out.PanicConcurrency, out.PanicRPS = pa.stats()
	return out, nil
}

// grow enlarges the ring to n seconds, keeping the buckets it holds.
func (s *series) grow(n int64) {
	old := s.ring
	s.ring = newRing(n)
	oldest := s.last - int64(len(old)) // slots at or before it may be partial
	for _, b := range old {
		if b.sec > oldest && b.sec > s.last-n {
			s.ring[mod(b.sec, n)] = b
		}
	}
}
