package app

import "github.com/thaw-dev/thaw/autoscaler"

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
type pokingRecorder struct {
	autoscaler.Recorder
	poker autoscaler.Poker
}

// Record implements autoscaler.Recorder.
func (r pokingRecorder) Record(s autoscaler.Sample) {
	r.Recorder.Record(s)
	if s.Requests > 0 {
		r.poker.Poke(s.Revision)
	}
}

// RecordBatch implements autoscaler.BatchRecorder: the batch goes to the
// collector whole (one clock read, cached lookups), then the pokes.
func (r pokingRecorder) RecordBatch(b *autoscaler.Batch) {
	autoscaler.RecordBatch(r.Recorder, b)
	for i := range b.Samples {
		if b.Samples[i].Requests > 0 {
			r.poker.Poke(b.Samples[i].Revision)
		}
	}
}
