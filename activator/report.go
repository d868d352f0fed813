package activator

import (
	"context"

	"github.com/thaw-dev/thaw/autoscaler"
)

// reportLoop sends one autoscaler.Sample per revision every ReportInterval:
// Concurrency = held + in flight, Requests = arrivals since the last sample.
// Idle revisions are reported once (the zero that ends their activity) and
// then skipped, so 10k idle revisions cost nothing.
func (a *Activator) reportLoop(ctx context.Context) {
	if a.opts.Recorder == nil {
		return
	}
	tick := a.opts.Clock.NewTicker(a.opts.ReportInterval)
	defer tick.Stop()
	active := map[*throttler]bool{}
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C():
		}
		now := a.opts.Clock.Now()
		throttlers := *a.throttlers.Load()
		for _, t := range throttlers {
			held, inFlight, arrived := t.waiting.Load(), t.inFlight.Load(), t.arrivals.Swap(0)
			busy := held+inFlight+arrived > 0
			if !busy && !active[t] {
				continue
			}
			if busy {
				active[t] = true
			} else {
				delete(active, t)
			}
			a.opts.Recorder.Record(autoscaler.Sample{
				Revision: t.key, Source: SampleSource, Time: now,
				Concurrency: float64(held + inFlight), Requests: float64(arrived),
			})
		}
		for t := range active {
			if throttlers[t.key] != t {
				delete(active, t)
			}
		}
	}
}
