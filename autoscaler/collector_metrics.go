package autoscaler

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// RegisterMetrics registers the collector's counters on reg:
// thaw_autoscaler_samples_dropped_total with reason "time" (Dropped:
// stamped too far ahead or older than the ring) and "unknown_revision"
// (DroppedUnknown: no window is created for a revision the registry does
// not know). It returns the registration error, if any.
func (c *Collector) RegisterMetrics(reg prometheus.Registerer) error {
	for _, m := range []struct {
		reason string
		value  func() uint64
	}{{"time", c.Dropped}, {"unknown_revision", c.DroppedUnknown}} {
		value := m.value
		cf := prometheus.NewCounterFunc(prometheus.CounterOpts{
			Namespace: "thaw", Subsystem: "autoscaler", Name: "samples_dropped_total",
			Help:        "Load samples the collector dropped, by reason.",
			ConstLabels: prometheus.Labels{"reason": m.reason},
		}, func() float64 { return float64(value()) })
		if err := reg.Register(cf); err != nil {
			return fmt.Errorf("autoscaler: register collector metrics: %w", err)
		}
	}
	return nil
}
