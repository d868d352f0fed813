package activator

import (
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestMetricsPerRevisionOnlyWhenAsked checks that the activator's gauges
// are sums over all revisions by default (a constant number of series
// whatever the number of revisions) and per revision only with
// RevisionMetrics, with the same values.
func TestMetricsPerRevisionOnlyWhenAsked(t *testing.T) {
	for _, perRevision := range []bool{false, true} {
		bubble(t, func(t *testing.T) {
			reg := prometheus.NewPedanticRegistry()
			e := newEnv(t, Options{Registerer: reg, RevisionMetrics: perRevision})
			e.upsert(demo, 1, time.Minute, 10)
			e.backends(demo, "127.0.0.1", "127.0.0.2")
			synctest.Wait()
			_, release := mustAcquire(t, e.act, demo)
			defer release()

			sums := `
# HELP thaw_activator_backends Backends the activator sends requests to (ready and probed), summed over revisions.
# TYPE thaw_activator_backends gauge
thaw_activator_backends 2
# HELP thaw_activator_requests Requests over all revisions: held (waiting for a backend) and in_flight (sent to a backend, not ended).
# TYPE thaw_activator_requests gauge
thaw_activator_requests{state="held"} 0
thaw_activator_requests{state="in_flight"} 1
`
			if err := testutil.GatherAndCompare(reg, strings.NewReader(sums), "thaw_activator_backends", "thaw_activator_requests"); err != nil {
				t.Errorf("sums (RevisionMetrics %v): %v", perRevision, err)
			}
			n, err := testutil.GatherAndCount(reg, "thaw_activator_held_requests", "thaw_activator_in_flight_requests", "thaw_activator_pods")
			if err != nil {
				t.Fatal(err)
			}
			want := 0
			if perRevision {
				want = 3
			}
			if n != want {
				t.Errorf("RevisionMetrics %v: %d per-revision series, want %d", perRevision, n, want)
			}
			if perRevision {
				one := `
# HELP thaw_activator_in_flight_requests Requests the activator sent to a backend of the revision that have not ended.
# TYPE thaw_activator_in_flight_requests gauge
thaw_activator_in_flight_requests{revision="default/demo"} 1
`
				if err := testutil.GatherAndCompare(reg, strings.NewReader(one), "thaw_activator_in_flight_requests"); err != nil {
					t.Error(err)
				}
			}
		})
	}
}
