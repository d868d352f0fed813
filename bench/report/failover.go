package main

import (
	"fmt"

	"github.com/thaw-dev/thaw/bench/results"
)

// failoverRows judges the thaw-crash scenario: no request fails while thaw
// is down and backends are ready (issue: no single point of failure on the
// request path); the failover time is for information.
func failoverRows(f *results.Failover) []row {
	if f == nil {
		return []row{{What: "thaw killed under proxy-mode load", Measured: "not run", Result: missing}}
	}
	return []row{
		{What: "thaw killed (SIGKILL) under proxy-mode load and restarted: failed requests",
			Measured: fmt.Sprintf("%d of %d", f.Errors, f.Requests), Target: "0", Result: atMost(f.Requests > 0, float64(f.Errors), 0),
			Means: "while thaw is down, the route retries each request the activator cannot take on the revision's ready backends"},
		{What: "failover time: kill to the first request retried on the backends",
			Measured: fmtMs(f.DirectAfterMs), Target: "", Result: info,
			Means: fmt.Sprintf("while thaw is down every request tries the activator, then its retry goes to the backends (p50 while down %s, before %s; p99 %s, before %s)",
				fmtMs(f.Down.P50Ms), fmtMs(f.Before.P50Ms), fmtMs(f.Down.P99Ms), fmtMs(f.Before.P99Ms))},
		{What: "failback time: restart to the first request routed by the new activator",
			Measured: fmtMs(f.BackAfterMs), Target: "", Result: info,
			Means: "thaw's own start: the first request after it answers goes to the activator again"},
	}
}
