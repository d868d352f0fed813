package autoscaler

import (
	"errors"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// Per-revision metric names, labelled with revision="namespace/name".
// Exported only with MultiscalerOptions.RevisionMetrics.
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

// Cluster-wide metric names, always exported: sums and counts over every
// revision this replica decides.
const (
	// MetricRevisions counts revisions by state: "scaled" (desired > 0),
	// "zero" (desired 0), "undecided" (no decision yet).
	MetricRevisions = "thaw_autoscaler_revisions"
	// MetricRevisionsPanicking counts revisions in panic mode.
	MetricRevisionsPanicking = "thaw_autoscaler_revisions_panicking"
	// MetricRevisionsWithoutData counts revisions whose last decision had
	// no data (the scale was only kept within bounds).
	MetricRevisionsWithoutData = "thaw_autoscaler_revisions_without_data"
	// MetricRevisionsDormant counts revisions out of the decision loops:
	// at zero with nothing to decide until an input, or the alarm of
	// their wake policy's warm windows, wakes them.
	MetricRevisionsDormant = "thaw_autoscaler_revisions_dormant"
	// MetricPods sums pods over revisions, by kind: desired, recommended,
	// ready.
	MetricPods = "thaw_autoscaler_pods"
	// MetricObservedConcurrency and MetricObservedRPS sum the window
	// averages over revisions, by window: stable, panic.
	MetricObservedConcurrency = "thaw_autoscaler_observed_concurrency"
	MetricObservedRPS         = "thaw_autoscaler_observed_rps"
	// MetricAppliedScaleChanges counts scale changes applied (all revisions).
	MetricAppliedScaleChanges = "thaw_autoscaler_applied_scale_changes_total"
	// MetricScaleTargetFailures counts failed scale target calls (all
	// revisions), by operation: get, set.
	MetricScaleTargetFailures = "thaw_autoscaler_scale_target_failures_total"
	// MetricDecisions counts decisions taken (ticks and pokes).
	MetricDecisions = "thaw_autoscaler_decisions_total"
	// MetricActivationTimeouts counts wake-ups from zero that had no ready
	// pod within their revision's activation timeout (all revisions); each
	// made the revision's held and new requests fail fast
	// (Decision.ActivationTimedOut).
	MetricActivationTimeouts = "thaw_autoscaler_activation_timeouts_total"
)

// totals are the cluster-wide counters; they survive revisions.
type totals struct {
	changes, getErrors, setErrors atomic.Uint64
	pastDecisions                 atomic.Uint64 // of the shards of Runs that ended
	activationTimeouts            atomic.Uint64
}

// metricsCollector reads the multiscaler's state at scrape time: a decision
// costs no metric update, and no series exists per revision unless asked
// for.
type metricsCollector struct {
	m           *Multiscaler
	perRevision bool

	revisions, panicking, noData, pods, conc, rps, changesAll, failures, decisions *prometheus.Desc
	activationTimeouts, dormant                                                    *prometheus.Desc
	// per revision, in revGauges order
	gauges           []*prometheus.Desc
	changes, errsRev *prometheus.Desc
}

var _ prometheus.Collector = (*metricsCollector)(nil)

var revGauges = []struct{ name, help string }{
	{MetricDesiredPods, "Replicas the autoscaler applies (after bounds and the scale-to-zero gate)."},
	{MetricRecommendedPods, "Replicas the decider recommends within bounds, before the scale-to-zero gate."},
	{MetricReadyPods, "Ready replicas reported by the scale target."},
	{MetricStableConcurrency, "Requests in flight, stable-window average, summed over sources."},
	{MetricPanicConcurrency, "Requests in flight, panic-window average, summed over sources."},
	{MetricStableRPS, "Requests per second, stable-window average."},
	{MetricPanicRPS, "Requests per second, panic-window average."},
	{MetricTarget, "Target per pod in the revision's metric unit (target x utilization)."},
	{MetricExcessBurstCapacity, "Excess burst capacity in the revision's metric unit; negative keeps the activator in the path."},
	{MetricPanicMode, "1 while the revision's decider is in panic mode, else 0."},
}

func newMetricsCollector(m *Multiscaler, perRevision bool) *metricsCollector {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, labels, nil)
	}
	c := &metricsCollector{
		m: m, perRevision: perRevision,
		revisions:  d(MetricRevisions, "Revisions the autoscaler decides, by state: scaled (desired > 0), zero, undecided.", "state"),
		panicking:  d(MetricRevisionsPanicking, "Revisions whose decider is in panic mode."),
		noData:     d(MetricRevisionsWithoutData, "Revisions whose last decision had no metric data in the stable window."),
		pods:       d(MetricPods, "Pods summed over revisions, by kind: desired (applied), recommended (before the scale-to-zero gate), ready.", "kind"),
		conc:       d(MetricObservedConcurrency, "Requests in flight summed over revisions, by averaging window (stable, panic).", "window"),
		rps:        d(MetricObservedRPS, "Requests per second summed over revisions, by averaging window (stable, panic).", "window"),
		changesAll: d(MetricAppliedScaleChanges, "Scale changes applied to scale targets, all revisions."),
		failures:   d(MetricScaleTargetFailures, "Failed scale target calls, all revisions, by operation (get, set).", "op"),
		decisions:  d(MetricDecisions, "Decisions taken (ticks and pokes), all revisions."),
		dormant:    d(MetricRevisionsDormant, "Revisions at zero with nothing to decide, out of the decision loops until a sample, a registry change, a poke or their wake policy's next window change wakes them."),
		activationTimeouts: d(MetricActivationTimeouts,
			"Wake-ups from zero without a ready pod within the revision's activation timeout, all revisions (their requests were answered 503 ActivationTimeout)."),
	}
	if perRevision {
		for _, g := range revGauges {
			c.gauges = append(c.gauges, d(g.name, g.help, "revision"))
		}
		c.changes = d(MetricScaleChanges, "Scale changes applied to the scale target.", "revision")
		c.errsRev = d(MetricScaleErrors, "Failed scale target calls, by operation (get, set).", "revision", "op")
	}
	return c
}

// registerMetrics registers c; a second multiscaler on the same registry
// keeps the first one's metrics.
func registerMetrics(reg prometheus.Registerer, c *metricsCollector) {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			return
		}
		panic(err) // a name clash with a different metric is a programming error
	}
}

// Describe implements prometheus.Collector.
func (c *metricsCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.revisions, c.panicking, c.noData, c.pods, c.conc, c.rps,
		c.changesAll, c.failures, c.decisions, c.activationTimeouts, c.dormant} {
		ch <- d
	}
	if c.perRevision {
		for _, d := range c.gauges {
			ch <- d
		}
		ch <- c.changes
		ch <- c.errsRev
	}
}

// aggregate is one scrape's sums.
type aggregate struct {
	scaled, zero, undecided, panicking, noData float64
	desired, recommended, ready                float64
	stableConc, panicConc, stableRPS, panicRPS float64
}

func (a *aggregate) add(d *Decision) {
	if d.DesiredScale > 0 {
		a.scaled++
	} else {
		a.zero++
	}
	if d.InPanic {
		a.panicking++
	}
	if !d.Valid {
		a.noData++
	}
	a.desired += float64(d.DesiredScale)
	a.recommended += float64(d.Recommended)
	a.ready += float64(d.ReadyPods)
	a.stableConc += d.StableConcurrency
	a.panicConc += d.PanicConcurrency
	a.stableRPS += d.StableRPS
	a.panicRPS += d.PanicRPS
}

// Collect implements prometheus.Collector.
func (c *metricsCollector) Collect(ch chan<- prometheus.Metric) {
	var agg aggregate
	var decisions uint64
	var dormant float64
	m := c.m
	m.mu.RLock()
	for _, sh := range m.shards {
		decisions += sh.decisions.Load()
	}
	for _, st := range m.states {
		st.mu.Lock()
		d, ok, target := st.status, st.hasStatus, st.target
		changes, getErrs, setErrs := st.changes, st.getErrors, st.setErrors
		st.mu.Unlock()
		if st.dormant.Load() {
			dormant++
		}
		if !ok {
			agg.undecided++
		} else {
			agg.add(&d)
		}
		if !c.perRevision {
			continue
		}
		l := st.key.String()
		if ok {
			for i, v := range [...]float64{float64(d.DesiredScale), float64(d.Recommended), float64(d.ReadyPods),
				d.StableConcurrency, d.PanicConcurrency, d.StableRPS, d.PanicRPS, target,
				float64(d.ExcessBurstCapacity), boolFloat(d.InPanic)} {
				ch <- prometheus.MustNewConstMetric(c.gauges[i], prometheus.GaugeValue, v, l)
			}
		}
		ch <- prometheus.MustNewConstMetric(c.changes, prometheus.CounterValue, float64(changes), l)
		ch <- prometheus.MustNewConstMetric(c.errsRev, prometheus.CounterValue, float64(getErrs), l, "get")
		ch <- prometheus.MustNewConstMetric(c.errsRev, prometheus.CounterValue, float64(setErrs), l, "set")
	}
	m.mu.RUnlock()
	// The decision counter of past Runs' shards is kept in totals.
	decisions += m.totals.pastDecisions.Load()
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	gauge(c.revisions, agg.scaled, "scaled")
	gauge(c.revisions, agg.zero, "zero")
	gauge(c.revisions, agg.undecided, "undecided")
	gauge(c.panicking, agg.panicking)
	gauge(c.noData, agg.noData)
	gauge(c.dormant, dormant)
	gauge(c.pods, agg.desired, "desired")
	gauge(c.pods, agg.recommended, "recommended")
	gauge(c.pods, agg.ready, "ready")
	gauge(c.conc, agg.stableConc, "stable")
	gauge(c.conc, agg.panicConc, "panic")
	gauge(c.rps, agg.stableRPS, "stable")
	gauge(c.rps, agg.panicRPS, "panic")
	counter(c.changesAll, m.totals.changes.Load())
	counter(c.failures, m.totals.getErrors.Load(), "get")
	counter(c.failures, m.totals.setErrors.Load(), "set")
	counter(c.decisions, decisions)
	counter(c.activationTimeouts, m.totals.activationTimeouts.Load())
}

func boolFloat(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
