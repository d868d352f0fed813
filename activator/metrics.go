package activator

import (
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

const outcomeAcquired = "acquired"

// metrics are the activator's Prometheus metrics. Gauges are read from the
// throttlers at scrape time, so the request path pays nothing for them:
// sums over all revisions always, one series per revision only with
// Options.RevisionMetrics.
type metrics struct {
	a           *Activator
	perRevision bool

	holdDuration *prometheus.HistogramVec
	requests     *prometheus.Desc
	backends     *prometheus.Desc
	held         *prometheus.Desc
	inFlight     *prometheus.Desc
	pods         *prometheus.Desc
}

var _ prometheus.Collector = (*metrics)(nil)

func newMetrics(a *Activator, perRevision bool) *metrics {
	return &metrics{
		a: a, perRevision: perRevision,
		requests: prometheus.NewDesc("thaw_activator_requests",
			"Requests over all revisions: held (waiting for a backend) and in_flight (sent to a backend, not ended).",
			[]string{"state"}, nil),
		backends: prometheus.NewDesc("thaw_activator_backends",
			"Backends the activator sends requests to (ready and probed), summed over revisions.", nil, nil),
		holdDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "thaw", Subsystem: "activator", Name: "hold_duration_seconds",
			Help: "How long requests were held waiting for a backend (the cold-start wait), in seconds, " +
				"by outcome (acquired, hold_timeout, queue_full, held_limit, shutting_down, unknown_revision, wake_failed, canceled). " +
				"Requests served at once are not observed; held_limit counts requests refused at once (observed as 0 s) " +
				"because the activator held its limit of requests (Envoy's open-file budget).",
			Buckets: []float64{.001, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300},
		}, []string{"outcome"}),
		held: prometheus.NewDesc("thaw_activator_held_requests",
			"Requests currently held for the revision (waiting for a backend).", []string{"revision"}, nil),
		inFlight: prometheus.NewDesc("thaw_activator_in_flight_requests",
			"Requests the activator sent to a backend of the revision that have not ended.", []string{"revision"}, nil),
		pods: prometheus.NewDesc("thaw_activator_pods",
			"Backends of the revision the activator sends requests to (ready and probed).", []string{"revision"}, nil),
	}
}

func (m *metrics) register(r prometheus.Registerer) error {
	return errors.Join(r.Register(m.holdDuration), r.Register(m))
}

func (m *metrics) observeHold(outcome string, d time.Duration) {
	m.holdDuration.WithLabelValues(outcome).Observe(d.Seconds())
}

// Describe implements prometheus.Collector.
func (m *metrics) Describe(ch chan<- *prometheus.Desc) {
	ch <- m.requests
	ch <- m.backends
	if m.perRevision {
		ch <- m.held
		ch <- m.inFlight
		ch <- m.pods
	}
}

// Collect implements prometheus.Collector.
func (m *metrics) Collect(ch chan<- prometheus.Metric) {
	var held, inFlight, pods int64
	for key, t := range *m.a.throttlers.Load() {
		h, f, p := t.waiting.Load(), t.inFlight.Load(), int64(len(t.state.Load().pods))
		held, inFlight, pods = held+h, inFlight+f, pods+p
		if m.perRevision {
			k := key.String()
			ch <- prometheus.MustNewConstMetric(m.held, prometheus.GaugeValue, float64(h), k)
			ch <- prometheus.MustNewConstMetric(m.inFlight, prometheus.GaugeValue, float64(f), k)
			ch <- prometheus.MustNewConstMetric(m.pods, prometheus.GaugeValue, float64(p), k)
		}
	}
	ch <- prometheus.MustNewConstMetric(m.requests, prometheus.GaugeValue, float64(held), "held")
	ch <- prometheus.MustNewConstMetric(m.requests, prometheus.GaugeValue, float64(inFlight), "in_flight")
	ch <- prometheus.MustNewConstMetric(m.backends, prometheus.GaugeValue, float64(pods))
}
