package xds

import (
	"go.uber.org/zap"

	"github.com/thaw-dev/thaw/revision"
)

// splitVerdicts is one published set of skipped fleet splits.
type splitVerdicts struct {
	skipped map[revision.Key]error
	// changed is closed when a different set replaces this one.
	changed chan struct{}
}

// logSkippedSplits logs the splits of thaw's own fleet newly left out of
// the translation (revision.Split: an invalid split, or one with a member
// left out) and sets thaw_xds_skipped_splits. Only the apply goroutine
// calls it; it keeps what it logged in s.skippedSplits and publishes a
// changed set to SplitVerdicts.
func (s *Server) logSkippedSplits(skipped map[revision.Key]error) {
	changed := len(skipped) != len(s.skippedSplits)
	for k, err := range skipped {
		if old, ok := s.skippedSplits[k]; ok && old.Error() == err.Error() {
			continue
		}
		changed = true
		s.log.Error("traffic split left out of Envoy configuration: its hosts answer 404",
			zap.String("split", k.String()), zap.Error(err))
	}
	for k := range s.skippedSplits {
		if _, still := skipped[k]; !still {
			changed = true
			s.log.Info("traffic split routed again", zap.String("split", k.String()))
		}
	}
	s.skippedSplits = skipped
	s.metrics.skippedSplits.Set(float64(len(skipped)))
	if changed {
		old := s.verdicts()
		s.splitVerdicts.Store(&splitVerdicts{skipped: skipped, changed: make(chan struct{})})
		close(old.changed)
	}
}

// verdicts returns the published set, creating the empty one first.
func (s *Server) verdicts() *splitVerdicts {
	if v := s.splitVerdicts.Load(); v != nil {
		return v
	}
	s.splitVerdicts.CompareAndSwap(nil, &splitVerdicts{changed: make(chan struct{})})
	return s.splitVerdicts.Load()
}

// SplitVerdicts returns the translation's verdict on the splits of
// thaw's own fleet: the splits the last translation left out (their
// hosts answer 404), each with why (a *translate.SplitLeftOutError when
// the registry accepts the split but a member was left out, else the
// registry's Split.Err wrapped), and a channel closed when the set
// changes. The map is shared: read it, never write it. Lock-free; any
// goroutine.
func (s *Server) SplitVerdicts() (map[revision.Key]error, <-chan struct{}) {
	v := s.verdicts()
	return v.skipped, v.changed
}
