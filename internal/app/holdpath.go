package app

import (
	"context"
	"time"

	"k8s.io/utils/clock"

	"github.com/thaw-dev/thaw/extproc"
	"github.com/thaw-dev/thaw/revision"
)

// holdPathInterval is how often the requests held for idle revisions are
// reported to the collector: Envoy's stats flush interval, the
// autoscaler's resolution for every other request.
const holdPathInterval = time.Second

// reportHoldPath feeds the collector, once per holdPathInterval, the
// requests that came through the hold listener (idle revisions have no
// cluster whose stats would count them; extproc.HoldPathMetadata) until
// ctx ends; a revision woken by them is reported at zero while it keeps
// a backend (see extproc.Server.ReportHoldPath). The samples go to this replica's collector: with several
// replicas only the leader's own hold-path requests reach the deciders
// (a follower's held request still pokes through its activator, and the
// revision's first backend brings its cluster, whose stats every replica
// sees through Envoy).
func (a *App) reportHoldPath(ctx context.Context, clk clock.WithTicker) error {
	t := clk.NewTicker(holdPathInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C():
			snap := a.opts.Registry.Snapshot()
			a.ext.ReportHoldPath(a.collector, extproc.HoldPathSource, clk.Now(), func(k revision.Key) bool {
				rev := snap.Get(k)
				return rev != nil && len(rev.Backends) > 0
			})
		}
	}
}
