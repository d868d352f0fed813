package kube

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// Metric names of the Kubernetes platform (namespace thaw, subsystem kube).
const (
	MetricRevisions     = "thaw_kube_revisions"
	MetricConfigErrors  = "thaw_kube_config_errors_total"
	MetricScalePatches  = "thaw_kube_scale_patches_total"
	MetricStatusPatches = "thaw_kube_status_patches_total"
	MetricKeyConflicts  = "thaw_kube_key_conflicts"
	MetricLeader        = "thaw_kube_leader"
	// MetricCostPatches counts pod-deletion-cost patches by result.
	MetricCostPatches = "thaw_kube_deletion_cost_patches_total"
	// MetricRevisionStatusPatches counts Revision status writes by result.
	MetricRevisionStatusPatches = "thaw_kube_revision_status_patches_total"
	// MetricSplitStatusPatches counts RevisionSplit status writes by
	// result.
	MetricSplitStatusPatches = "thaw_kube_revisionsplit_status_patches_total"
	// MetricSplits counts RevisionSplits by the reason of their Ready
	// condition.
	MetricSplits = "thaw_kube_revisionsplits"
)

type metrics struct {
	// revisions counts workloads that are revisions, by state
	// ("valid", "invalid").
	revisions *prometheus.GaugeVec
	// configErrors counts rejected configurations by the field at fault,
	// once per distinct error of a workload.
	configErrors *prometheus.CounterVec
	// scalePatches counts /scale patches by result ("ok", "not_found",
	// "error").
	scalePatches *prometheus.CounterVec
	// statusPatches counts thaw.dev/status patches by result ("ok",
	// "error").
	statusPatches *prometheus.CounterVec
	// keyConflicts is the number of revision keys claimed by both a
	// Deployment and a StatefulSet.
	keyConflicts prometheus.Gauge
	// leader is 1 while this replica leads (or always, without election).
	leader prometheus.Gauge
	// costPatches counts pod-deletion-cost patches by result ("ok",
	// "error").
	costPatches *prometheus.CounterVec
	// revisionStatusPatches counts Revision status writes by result
	// ("ok", "error").
	revisionStatusPatches *prometheus.CounterVec
	// splitStatusPatches counts RevisionSplit status writes by result
	// ("ok", "error").
	splitStatusPatches *prometheus.CounterVec
	// splits counts RevisionSplits by Ready reason (Resolved,
	// RevisionNotFound, ...; a fixed set).
	splits *prometheus.GaugeVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		revisions: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: MetricRevisions, Help: "Revisions (Revision objects and annotated workloads), by state (valid, invalid).",
		}, []string{"state"}),
		configErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricConfigErrors, Help: "Rejected revision configurations, by the annotation or Revision field at fault.",
		}, []string{"field"}),
		scalePatches: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricScalePatches, Help: "Patches of the /scale subresource, by result (ok, not_found, error).",
		}, []string{"result"}),
		statusPatches: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricStatusPatches, Help: "Patches of the thaw.dev/status annotation, by result (ok, error).",
		}, []string{"result"}),
		keyConflicts: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: MetricKeyConflicts, Help: "Revision keys claimed by both a Deployment and a StatefulSet.",
		}),
		leader: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: MetricLeader, Help: "1 while this thaw replica writes to the cluster (leads), else 0.",
		}),
		revisionStatusPatches: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricRevisionStatusPatches, Help: "Writes of Revision status (thaw.dev/v1alpha1, status subresource), by result (ok, error).",
		}, []string{"result"}),
		splitStatusPatches: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricSplitStatusPatches, Help: "Writes of RevisionSplit status (thaw.dev/v1alpha1, status subresource), by result (ok, error).",
		}, []string{"result"}),
		splits: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: MetricSplits, Help: "RevisionSplits by the reason of their Ready condition (Resolved, InvalidSplit, RevisionNotFound, ScaledByOtherAutoscaler, RevisionInvalid, Pending).",
		}, []string{"reason"}),
		costPatches: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricCostPatches, Help: "Patches of pods' controller.kubernetes.io/pod-deletion-cost before a scale-down, by result (ok, error).",
		}, []string{"result"}),
	}
	if reg == nil {
		return m, nil
	}
	var errs []error
	for _, c := range []prometheus.Collector{m.revisions, m.configErrors, m.scalePatches, m.statusPatches, m.keyConflicts, m.leader, m.costPatches, m.revisionStatusPatches, m.splitStatusPatches, m.splits} {
		errs = append(errs, reg.Register(c))
	}
	return m, errors.Join(errs...)
}
