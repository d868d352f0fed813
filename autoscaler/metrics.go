package autoscaler

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/thaw-dev/thaw/revision"
)

// Metric names, all labelled with revision="namespace/name".
const (
	MetricDesiredPods         = "thaw_autoscaler_desired_pods"
	MetricRecommendedPods     = "thaw_autoscaler_recommended_pods"
	MetricReadyPods           = "thaw_autoscaler_ready_pods"
	MetricStableConcurrency   = "thaw_autoscaler_stable_concurrency"
	MetricPanicConcurrency    = "thaw_autoscaler_panic_concurrency"
	MetricStableRPS           = "thaw_autoscaler_stable_rps"
	MetricPanicRPS            = "thaw_autoscaler_panic_rps"
	MetricTarget              = "thaw_autoscaler_target"
	MetricExcessBurstCapacity = "thaw_autoscaler_excess_burst_capacity"
	MetricPanicMode           = "thaw_autoscaler_panic_mode"
	MetricScaleChanges        = "thaw_autoscaler_scale_changes_total"
	MetricScaleErrors         = "thaw_autoscaler_scale_target_errors_total"
)

type metrics struct {
	gauges  []*prometheus.GaugeVec // in revMetrics field order
	changes *prometheus.CounterVec
	errors  *prometheus.CounterVec
}

// revMetrics are one revision's children, resolved once so a decision only
// does atomic stores.
type revMetrics struct {
	desired, recommended, ready   prometheus.Gauge
	stableConc, panicConc         prometheus.Gauge
	stableRPS, panicRPS           prometheus.Gauge
	target, ebc, panic            prometheus.Gauge
	changes, getErrors, setErrors prometheus.Counter
	lastTarget                    float64
}

func newMetrics(reg prometheus.Registerer) *metrics {
	gauge := func(name, help string) *prometheus.GaugeVec {
		return register(reg, prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, []string{"revision"}))
	}
	m := &metrics{
		gauges: []*prometheus.GaugeVec{
			gauge(MetricDesiredPods, "Replicas the autoscaler applies (after bounds and the scale-to-zero gate)."),
			gauge(MetricRecommendedPods, "Replicas the decider recommends within bounds, before the scale-to-zero gate."),
			gauge(MetricReadyPods, "Ready replicas reported by the scale target."),
			gauge(MetricStableConcurrency, "Requests in flight, stable-window average, summed over sources."),
			gauge(MetricPanicConcurrency, "Requests in flight, panic-window average, summed over sources."),
			gauge(MetricStableRPS, "Requests per second, stable-window average."),
			gauge(MetricPanicRPS, "Requests per second, panic-window average."),
			gauge(MetricTarget, "Target per pod in the revision's metric unit (target x utilization)."),
			gauge(MetricExcessBurstCapacity, "Excess burst capacity in the revision's metric unit; negative keeps the activator in the path."),
			gauge(MetricPanicMode, "1 while the revision's decider is in panic mode, else 0."),
		},
		changes: register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricScaleChanges, Help: "Scale changes applied to the scale target.",
		}, []string{"revision"})),
		errors: register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricScaleErrors, Help: "Failed scale target calls, by operation (get, set).",
		}, []string{"revision", "op"})),
	}
	return m
}

// register registers c, reusing an identical collector already registered
// (two multiscalers on one registry share their metrics).
func register[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing
			}
		}
		panic(err) // a name clash with a different metric is a programming error
	}
	return c
}

func (m *metrics) forRevision(key revision.Key) *revMetrics {
	l := key.String()
	g := func(i int) prometheus.Gauge { return m.gauges[i].WithLabelValues(l) }
	return &revMetrics{
		desired: g(0), recommended: g(1), ready: g(2),
		stableConc: g(3), panicConc: g(4), stableRPS: g(5), panicRPS: g(6),
		target: g(7), ebc: g(8), panic: g(9),
		changes:   m.changes.WithLabelValues(l),
		getErrors: m.errors.WithLabelValues(l, "get"),
		setErrors: m.errors.WithLabelValues(l, "set"),
	}
}

func (m *metrics) forget(key revision.Key) {
	l := key.String()
	for _, g := range m.gauges {
		g.DeleteLabelValues(l)
	}
	m.changes.DeleteLabelValues(l)
	m.errors.DeleteLabelValues(l, "get")
	m.errors.DeleteLabelValues(l, "set")
}

// observe sets the gauges that differ from prev (nil: all of them); a tick
// over many revisions mostly changes nothing, and skipping the atomic
// stores keeps it cache-friendly.
func (r *revMetrics) observe(d, prev *Decision, target float64) {
	all := prev == nil
	set := func(g prometheus.Gauge, v, old float64) {
		if all || v != old {
			g.Set(v)
		}
	}
	if all {
		prev = &Decision{}
		r.target.Set(target)
	} else if target != r.lastTarget {
		r.target.Set(target)
	}
	r.lastTarget = target
	set(r.desired, float64(d.DesiredScale), float64(prev.DesiredScale))
	set(r.recommended, float64(d.Recommended), float64(prev.Recommended))
	set(r.ready, float64(d.ReadyPods), float64(prev.ReadyPods))
	set(r.stableConc, d.StableConcurrency, prev.StableConcurrency)
	set(r.panicConc, d.PanicConcurrency, prev.PanicConcurrency)
	set(r.stableRPS, d.StableRPS, prev.StableRPS)
	set(r.panicRPS, d.PanicRPS, prev.PanicRPS)
	set(r.ebc, float64(d.ExcessBurstCapacity), float64(prev.ExcessBurstCapacity))
	set(r.panic, boolFloat(d.InPanic), boolFloat(prev.InPanic))
}

func boolFloat(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
