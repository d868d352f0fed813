package statsink

import (
	"github.com/prometheus/client_golang/prometheus"
)

// reason says why input was refused or only partly used. Its String is the
// "reason" label of thaw_statsink_bad_input_total.
type reason int

const (
	// reasonNoIdentifier: the first message of a stream has no identifier or
	// an empty node id. The stream is ended so Envoy reconnects and resends it.
	reasonNoIdentifier reason = iota
	// reasonMalformed: the message is not valid protobuf wire format; what
	// was decoded before the fault counts, the rest of the message is skipped.
	reasonMalformed
	// reasonOversized: the message exceeded the server's gRPC receive limit;
	// gRPC ends the stream.
	reasonOversized
	// reasonUnknownType: a metric family has a type outside
	// io.prometheus.client.MetricType.
	reasonUnknownType
	// reasonWrongType: a family thaw reads has an unexpected type, or a metric
	// carries no value of the family's type.
	reasonWrongType
	// reasonNotFinite: a value is NaN or infinite.
	reasonNotFinite
	// reasonNegative: a gauge or counter thaw reads is negative.
	reasonNegative
	// reasonNoClusterLabel: a metric of a family thaw reads has no
	// envoy.cluster_name label (emit_tags_as_labels is off?).
	reasonNoClusterLabel
	// reasonTimestamp: timestamp_ms is more than maxClockSkew away from the
	// receive time; the receive time is used instead.
	reasonTimestamp
	// reasonTooManyClusters: a node reported more than
	// Limits.MaxClustersPerNode distinct revision clusters; the extra ones
	// are ignored.
	reasonTooManyClusters
	// reasonDuplicateNode: a stream was refused because its node id (and
	// client certificate identity, with mTLS) already has a stream: two
	// Envoys configured with one id, or a reconnect before the old stream
	// ended.
	reasonDuplicateNode
	// reasonTooManyNodes: a stream of a new node id was refused because
	// Limits.MaxNodes node ids are connected.
	reasonTooManyNodes
	// reasonUnknownRevision: a metric names a revision cluster of a revision
	// the registry does not know (Limits.Known); it is dropped and no state
	// is kept for it.
	reasonUnknownRevision
	numReasons
)

var reasonNames = [numReasons]string{
	reasonNoIdentifier:    "no_identifier",
	reasonMalformed:       "malformed",
	reasonOversized:       "oversized",
	reasonUnknownType:     "unknown_type",
	reasonWrongType:       "wrong_type",
	reasonNotFinite:       "not_finite",
	reasonNegative:        "negative",
	reasonNoClusterLabel:  "no_cluster_label",
	reasonTimestamp:       "timestamp",
	reasonTooManyClusters: "too_many_clusters",
	reasonDuplicateNode:   "duplicate_node",
	reasonTooManyNodes:    "too_many_nodes",
	reasonUnknownRevision: "unknown_revision",
}

func (r reason) String() string { return reasonNames[r] }

// badCounts counts bad input per reason while one message is processed, so
// the Prometheus counters are touched once per message, not once per metric.
type badCounts [numReasons]int

func (b *badCounts) any() bool {
	for _, n := range b {
		if n > 0 {
			return true
		}
	}
	return false
}

// metrics are the sink's own Prometheus metrics.
type metrics struct {
	badInput      [numReasons]prometheus.Counter
	messages      prometheus.Counter
	samples       prometheus.Counter
	counterResets prometheus.Counter
	streams       prometheus.Gauge
	nodes         prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer) *metrics {
	bad := prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "thaw", Subsystem: "statsink", Name: "bad_input_total",
		Help: "Envoy stats input refused or partly ignored, by reason.",
	}, []string{"reason"})
	m := &metrics{
		messages: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "thaw", Subsystem: "statsink", Name: "messages_total",
			Help: "StreamMetrics messages received from Envoy.",
		}),
		samples: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "thaw", Subsystem: "statsink", Name: "samples_total",
			Help: "Load samples (one per revision per Envoy flush) handed to the autoscaler.",
		}),
		counterResets: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "thaw", Subsystem: "statsink", Name: "counter_resets_total",
			Help: "upstream_rq_total counters that went down (Envoy restarted or the stat was recreated).",
		}),
		streams: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "thaw", Subsystem: "statsink", Name: "streams",
			Help: "Open StreamMetrics streams.",
		}),
		nodes: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "thaw", Subsystem: "statsink", Name: "nodes",
			Help: "Envoy nodes known to the sink (connected, or disconnected and not yet expired).",
		}),
	}
	for r := range numReasons {
		m.badInput[r] = bad.WithLabelValues(r.String())
	}
	reg.MustRegister(bad, m.messages, m.samples, m.counterResets, m.streams, m.nodes)
	return m
}

// addBad adds one message's bad-input counts to the Prometheus counters.
func (m *metrics) addBad(b *badCounts) {
	for r, n := range b {
		if n > 0 {
			m.badInput[r].Add(float64(n))
		}
	}
}
