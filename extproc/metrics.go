package extproc

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	responses *prometheus.CounterVec
	streams   prometheus.Gauge
	byOutcome map[string]prometheus.Counter
}

func newMetrics() *metrics {
	m := &metrics{
		responses: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "thaw", Subsystem: "extproc", Name: "responses_total",
			Help: "Answers to request headers by outcome: routed (a backend was chosen), queue_full, held_limit (the held-request bound of Envoy's open-file limit), hold_timeout, " +
				"shutting_down, wake_failed (503), unknown_revision (404), bad_request (400), canceled (Envoy or the client left first), " +
				"wake_rule and waiting_page (a wake policy answered a request for a revision at zero).",
		}, []string{"outcome"}),
		streams: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "thaw", Subsystem: "extproc", Name: "streams",
			Help: "Open ext_proc streams: held requests plus requests in flight on a backend.",
		}),
		byOutcome: map[string]prometheus.Counter{},
	}
	for _, o := range []string{outcomeRouted, outcomeQueueFull, outcomeHeldLimit, outcomeHoldTimeout, outcomeShuttingDown,
		outcomeUnknownRevision, outcomeBadRequest, outcomeCanceled, outcomeWakeFailed, outcomeWakeRule, outcomeWaitingPage} {
		m.byOutcome[o] = m.responses.WithLabelValues(o)
	}
	return m
}

func (m *metrics) register(r prometheus.Registerer) error {
	return errors.Join(r.Register(m.responses), r.Register(m.streams))
}

func (m *metrics) answered(outcome string) { m.byOutcome[outcome].Inc() }

// CountHeldLimit adds n requests the activator module answered at its
// held bound (reported to modsvc), so both activators count into
// thaw_extproc_responses_total{outcome="held_limit"}.
func (s *Server) CountHeldLimit(n int64) {
	if n > 0 {
		s.metrics.byOutcome[outcomeHeldLimit].Add(float64(n))
	}
}
