package autoscaler

import (
	"time"

	"github.com/thaw-dev/thaw/revision"
)

// Batch is the samples one source observed at one time for several
// revisions: one Envoy stats flush. Recording a Batch is the same as one
// Record per sample with Source and Time set, minus per-sample overheads.
type Batch struct {
	// Source names who observed the samples (see Sample.Source).
	Source string
	// Time is when they were observed.
	Time time.Time
	// Samples are the revisions' values. A revision should appear once.
	Samples []BatchSample
}

// BatchSample is one revision's values in a Batch (see Sample).
type BatchSample struct {
	Revision    revision.Key
	Concurrency float64
	Requests    float64
	// Ref, when not nil, is the caller's cache of where the recorder keeps
	// this revision's samples from the batch's source. Keep one Ref per
	// (revision, source) and pass it with every batch: a Collector then
	// records without looking the revision and the source up again. The
	// recorder fills it in; a stale Ref (revision forgotten, source
	// pruned) is detected and refreshed. One Ref must not be in two
	// RecordBatch calls at once.
	Ref *Ref
}

// Ref is a BatchSample's cache (see BatchSample.Ref). The zero Ref is
// empty and valid.
type Ref struct {
	ser *series
	src int // index of the source in ser.srcs, a hint checked by name
}

// BatchRecorder is a Recorder that also takes a whole Batch at once.
type BatchRecorder interface {
	Recorder
	// RecordBatch records every sample of b. It must not keep b or its
	// Samples after it returns.
	RecordBatch(b *Batch)
}

var _ BatchRecorder = (*Collector)(nil)

// RecordBatch records b into r: through r.RecordBatch when r is a
// BatchRecorder, otherwise with one r.Record per sample.
func RecordBatch(r Recorder, b *Batch) {
	if br, ok := r.(BatchRecorder); ok {
		br.RecordBatch(b)
		return
	}
	for i := range b.Samples {
		s := &b.Samples[i]
		r.Record(Sample{Revision: s.Revision, Source: b.Source, Time: b.Time,
			Concurrency: s.Concurrency, Requests: s.Requests})
	}
}

// RecordBatch records every sample of b as Record would, reading the clock
// once for the whole batch and, through the samples' Refs, finding each
// revision and source without a map lookup. It does not allocate once the
// revisions and the source are known.
func (c *Collector) RecordBatch(b *Batch) {
	if b.Time.After(c.clock.Now().Add(MaxFutureSkew)) {
		c.dropped.Add(uint64(len(b.Samples)))
		return
	}
	sec := b.Time.Unix()
	var dropped, unknown uint64
	for i := range b.Samples {
		s := &b.Samples[i]
		var own Ref
		ref := s.Ref
		if ref == nil {
			ref = &own
		}
		switch c.recordRef(ref, s.Revision, sec, b.Source, clean(s.Concurrency), clean(s.Requests)) {
		case recordDropped:
			dropped++
		case recordUnknown:
			unknown++
		}
	}
	if dropped > 0 {
		c.dropped.Add(dropped)
	}
	if unknown > 0 {
		c.unknown.Add(unknown)
	}
}

type recordResult int

const (
	recorded recordResult = iota
	recordDropped
	recordUnknown
)

// recordRef records one sample into the series ref points to, resolving it
// (again) by key when ref is empty or its series was forgotten. The dropped
// flag is read under the series' lock, where Forget and Expire set it, so a
// sample never lands in a series that is already gone.
func (c *Collector) recordRef(ref *Ref, key revision.Key, sec int64, source string, conc, reqs float64) recordResult {
	for range 2 {
		ser := ref.ser
		if ser == nil {
			if ser = c.series(key, true); ser == nil {
				return recordUnknown
			}
			ref.ser = ser
		}
		ser.mu.Lock()
		if ser.dropped.Load() {
			ser.mu.Unlock()
			ref.ser = nil
			continue
		}
		ok := ser.record(sec, source, conc, reqs, c.expiry, c.window, &ref.src)
		woke := ser.watched
		ser.watched = false
		ser.mu.Unlock()
		if woke {
			c.wakeAll(key)
		}
		if !ok {
			return recordDropped
		}
		return recorded
	}
	// Forgotten twice while recording: the revision is being removed.
	return recordUnknown
}
