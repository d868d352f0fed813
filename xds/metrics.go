package xds

import (
	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the xds server's Prometheus metrics, registered on the
// Registerer passed to NewServer.
type metrics struct {
	// connectedNodes is the number of open xDS streams (normally one per
	// Envoy).
	connectedNodes prometheus.Gauge
	// pushes counts responses sent, by short type name.
	pushes *prometheus.CounterVec
	// pushedBytes counts bytes of responses sent (protobuf size), by short
	// type name.
	pushedBytes *prometheus.CounterVec
	// nacks counts rejected responses, by short type name.
	nacks *prometheus.CounterVec
	// flipToAck observes seconds from a changed ClusterLoadAssignment or
	// virtual host (a revision waking or going idle: translate/hold.go)
	// to the last connected node's ACK.
	flipToAck prometheus.Histogram
	// removalToAck observes seconds from a revision back at zero on the
	// module's cluster routes (its cluster removed) to the last connected
	// node's ACK of the removal (idle_module.go).
	removalToAck prometheus.Histogram
	// wakeClusterToAck observes seconds from a revision's cluster added
	// ahead of its first backend (translate.ClusterAhead) to the last
	// connected node's ACK of its assignment (idle_module.go).
	wakeClusterToAck prometheus.Histogram
	// applySeconds observes seconds to translate and apply one registry
	// snapshot (including make-before-break waits).
	applySeconds prometheus.Histogram
	// skipped is the number of revisions left out of the last translation
	// (host collisions, invalid traffic splits).
	skipped prometheus.Gauge
	// skippedSplits is the number of fleet splits (RevisionSplits with
	// hosts) left out of the last translation.
	skippedSplits prometheus.Gauge
	// removalFirst counts revisions whose endpoint update was split
	// (removal_first.go), by how the wait for the additions ended.
	removalFirst *prometheus.CounterVec
	// removalFirstSeconds observes seconds from a split's removal to its
	// additions (module_states.go).
	removalFirstSeconds prometheus.Histogram
	// stageTimeouts counts make-before-break stages that ended by
	// StageTimeout rather than by every Envoy's ACK (stage.go).
	stageTimeouts prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		connectedNodes: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "thaw", Subsystem: "xds", Name: "connected_nodes",
			Help: "Open xDS streams (normally one per Envoy).",
		}),
		pushes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "thaw", Subsystem: "xds", Name: "pushes_total",
			Help: "xDS responses sent, by resource type.",
		}, []string{"type"}),
		pushedBytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "thaw", Subsystem: "xds", Name: "pushed_bytes_total",
			Help: "Bytes of xDS responses sent (protobuf encoding), by resource type.",
		}, []string{"type"}),
		nacks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "thaw", Subsystem: "xds", Name: "nacks_total",
			Help: "xDS responses rejected by Envoy, by resource type.",
		}, []string{"type"}),
		flipToAck: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: "thaw", Subsystem: "xds", Name: "flip_to_ack_seconds",
			Help:    "Seconds from a ClusterLoadAssignment change (mode flip or backend change) or a virtual host change (a revision waking or going idle, make-before-break stage included) to the ACK of the last connected Envoy.",
			Buckets: flipBuckets,
		}),
		removalToAck: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: "thaw", Subsystem: "xds", Name: "removal_to_ack_seconds",
			Help:    "Seconds from a revision going back to zero on the activator module's cluster routes (its cluster removed, no route change) to the last connected Envoy's ACK of the cluster's removal; the return-to-zero twin of flip_to_ack_seconds' wakes.",
			Buckets: flipBuckets,
		}),
		wakeClusterToAck: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: "thaw", Subsystem: "xds", Name: "wake_cluster_to_ack_seconds",
			Help:    "Seconds from a revision's cluster added ahead of its first backend (the activator module's cluster routes, once the autoscaler wants it awake) to the last connected Envoy's ACK of its ClusterLoadAssignment; the first backend's own change is then a flip (flip_to_ack_seconds).",
			Buckets: flipBuckets,
		}),
		applySeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: "thaw", Subsystem: "xds", Name: "snapshot_apply_seconds",
			Help:    "Seconds to translate and apply one registry snapshot to the xDS caches.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}),
		skipped: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "thaw", Subsystem: "xds", Name: "skipped_revisions",
			Help: "Revisions left out of the last translation (host collisions, invalid traffic splits).",
		}),
		skippedSplits: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "thaw", Subsystem: "xds", Name: "skipped_splits",
			Help: "Traffic splits (RevisionSplits with hosts) left out of the last translation: invalid, or a member left out.",
		}),
		removalFirst: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "thaw", Subsystem: "xds", Name: "removal_first_total",
			Help: "Endpoint updates that removed and added hosts of a revision, sent removal first, by outcome: split (the removal sent alone), acked (every Envoy ACKed it), superseded (replaced by a full apply or removed), timeout (additions sent after StageTimeout without every Envoy's ACK), module_timeout (every Envoy ACKed, but a connected activator module had not applied the removal by StageTimeout).",
		}, []string{"outcome"}),
		removalFirstSeconds: newRemovalFirstSeconds(),
		stageTimeouts: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "thaw", Subsystem: "xds", Name: "stage_timeouts_total",
			Help: "Make-before-break stages (a cluster added before its routes, a route change before a removal) that went on after StageTimeout without every Envoy's ACK; changes queued behind such a stage waited for it.",
		}),
	}
	if reg != nil {
		reg.MustRegister(m.connectedNodes, m.pushes, m.pushedBytes, m.nacks, m.flipToAck, m.removalToAck, m.wakeClusterToAck, m.applySeconds, m.skipped, m.skippedSplits, m.removalFirst, m.removalFirstSeconds, m.stageTimeouts)
	}
	return m
}
