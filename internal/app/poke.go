package app

import (
	"github.com/thaw-dev/thaw/autoscaler"
	"github.com/thaw-dev/thaw/revision"
)

// pokingRecorder records Envoy's samples and pokes the autoscaler for every
// revision that received new requests. Envoy counts requests held by any
// replica's activator in the revision cluster's upstream_rq_total, so this
// is how the leader learns that a follower holds requests for a revision at
// zero: no follower-to-leader connection is needed, and it keeps working
// across a leader change (Envoy's stats stream follows the leader). Poke is
// cheap and ignores revisions that are not at zero.
//
// Requests in flight alone do not poke: after a scale to zero, a long
// response (a stream, a long poll) still runs on the backend being drained,
// and waking the revision for it would undo the scale-down while nothing
// new arrived. The metric's own rules (concurrency counts in-flight
// requests) still see it on the next tick.
//
// A revision whose wake policy answers requests at zero (probes, crawlers,
// the waiting page: wake.Policy.AnswersAtZero) is not poked by Envoy's
// counts, which include the requests the policy answered: with one thaw
// (no leader election) the activator that holds a request pokes directly;
// with several, a sample with requests in flight still pokes (a held
// request is in flight in its cluster while it waits; the policy's
// instant answers rarely are at a stats flush).
type pokingRecorder struct {
	autoscaler.Recorder
	poker autoscaler.Poker
	// quiet reports whether a revision's policy answers requests at zero
	// (nil: none does).
	quiet func(revision.Key) bool
	// single is true when this thaw is the only activator (no leader
	// election): its own pokes see every held request.
	single bool
}

// Record implements autoscaler.Recorder.
func (r pokingRecorder) Record(s autoscaler.Sample) {
	r.Recorder.Record(s)
	r.maybePoke(s.Revision, s.Requests, s.Concurrency)
}

func (r pokingRecorder) maybePoke(key revision.Key, requests, concurrency float64) {
	if requests <= 0 {
		return
	}
	if r.quiet != nil && (r.single || concurrency <= 0) && r.quiet(key) {
		return
	}
	r.poker.Poke(key)
}

// answersAtZero is pokingRecorder.quiet from the registry's snapshot.
func answersAtZero(reg *revision.Registry) func(revision.Key) bool {
	return func(key revision.Key) bool {
		rev := reg.Snapshot().Get(key)
		return rev != nil && rev.Spec.Wake.AnswersAtZero()
	}
}

// RecordBatch implements autoscaler.BatchRecorder: the batch goes to the
// collector whole (one clock read, cached lookups), then the pokes.
func (r pokingRecorder) RecordBatch(b *autoscaler.Batch) {
	autoscaler.RecordBatch(r.Recorder, b)
	for i := range b.Samples {
		s := &b.Samples[i]
		r.maybePoke(s.Revision, s.Requests, s.Concurrency)
	}
}
