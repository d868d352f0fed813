package app

import "github.com/thaw-dev/thaw/autoscaler"

// pokingRecorder records Envoy's samples and pokes the autoscaler for every
// revision with requests in flight. Envoy counts held requests in the
// revision cluster's upstream_rq_active, so this is how the leader learns
// that a follower holds requests for a revision at zero: no
// follower-to-leader connection is needed, and it keeps working across a
// leader change (Envoy's stats stream follows the leader). Poke is cheap
// and ignores revisions that are not at zero.
type pokingRecorder struct {
	autoscaler.Recorder
	poker autoscaler.Poker
}

// Record implements autoscaler.Recorder.
func (r pokingRecorder) Record(s autoscaler.Sample) {
	r.Recorder.Record(s)
	if s.Concurrency > 0 {
		r.poker.Poke(s.Revision)
	}
}
