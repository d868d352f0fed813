package egext

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Hook outcomes, the outcome label of thaw_eg_hook_calls_total.
const (
	// outcomeModified: the hook rewrote EG's cluster or route for a Revision.
	outcomeModified = "modified"
	// outcomeUnchanged: no Revision behind it; EG's resource came back as is.
	outcomeUnchanged = "unchanged"
	// outcomeInvalid: a bad Revision or several in one rule; the route
	// answers 500 with the reason and its cluster stays EG's.
	outcomeInvalid = "invalid"
	// outcomeError: thaw failed to build a valid result; EG got a gRPC
	// error (with failOpen false it keeps its last good configuration).
	outcomeError = "error"
)

// hookMetrics are the hook server's Prometheus metrics (registered on
// Options.Metrics): EG's translation waits on every call, so a slow or
// failing hook shows here before routes go stale.
type hookMetrics struct {
	calls   *prometheus.CounterVec   // hook, outcome
	seconds *prometheus.HistogramVec // hook
}

func newHookMetrics(reg prometheus.Registerer) (*hookMetrics, error) {
	m := &hookMetrics{
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "thaw", Subsystem: "eg", Name: "hook_calls_total",
			Help: "Envoy Gateway extension hook calls answered, by hook (cluster, route, translate) and outcome (modified, unchanged, invalid, error).",
		}, []string{"hook", "outcome"}),
		seconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "thaw", Subsystem: "eg", Name: "hook_duration_seconds",
			Help:    "Seconds thaw took to answer one Envoy Gateway extension hook call, by hook.",
			Buckets: []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.1},
		}, []string{"hook"}),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.calls, m.seconds} {
			if err := reg.Register(c); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}

// observe records one answered call of hook that started at start.
func (m *hookMetrics) observe(hook, outcome string, took time.Duration) {
	m.calls.WithLabelValues(hook, outcome).Inc()
	m.seconds.WithLabelValues(hook).Observe(took.Seconds())
}
