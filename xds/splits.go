package xds

import (
	"go.uber.org/zap"

	"github.com/thaw-dev/thaw/revision"
)

// logSkippedSplits logs the splits of thaw's own fleet newly left out of
// the translation (revision.Split: an invalid split, or one with a member
// left out) and sets thaw_xds_skipped_splits. Only the apply goroutine
// calls it; it keeps what it logged in s.skippedSplits.
func (s *Server) logSkippedSplits(skipped map[revision.Key]error) {
	for k, err := range skipped {
		if old, ok := s.skippedSplits[k]; ok && old.Error() == err.Error() {
			continue
		}
		s.log.Error("traffic split left out of Envoy configuration: its hosts answer 404",
			zap.String("split", k.String()), zap.Error(err))
	}
	for k := range s.skippedSplits {
		if _, still := skipped[k]; !still {
			s.log.Info("traffic split routed again", zap.String("split", k.String()))
		}
	}
	s.skippedSplits = skipped
	s.metrics.skippedSplits.Set(float64(len(skipped)))
}
