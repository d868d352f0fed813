// Package statsink is thaw's envoy.service.metrics.v3.MetricsService server:
// every Envoy streams its stats to it (the envoy.stat_sinks.metrics_service
// stat sink, flushed every second) and the sink turns them into
// autoscaler.Samples, one per revision per Envoy flush.
//
// What it reads, with emit_tags_as_labels (the family is the tag-extracted
// stat name, the cluster is in label envoy.cluster_name):
//
//   - cluster.upstream_rq_active + cluster.upstream_rq_pending_active
//     (gauges) -> Sample.Concurrency. Requests held by the activator count
//     too: in proxy mode they are in flight on the revision's own cluster.
//   - cluster.upstream_rq_total (cumulative counter) -> Sample.Requests, the
//     delta since the same node's previous flush.
//
// Clusters are mapped to revisions with revision.RevisionFromCluster; other
// clusters and families are skipped after a name comparison.
//
// Semantics:
//
//   - Source: the node id from the identifier Envoy sends on the first
//     message of each stream. A first message without one ends the stream
//     (InvalidArgument) so that Envoy reconnects and sends it again.
//   - Time: Envoy's timestamp_ms (its snapshot time), or the receive time
//     when absent or more than a minute off.
//   - Counters: the first flush after a node (re)connects only sets a base
//     for clusters the sink has no base for (their history is unknown). A
//     cluster first seen later counts in full (Envoy sends only stats that
//     were written, so all of it is new). A counter that goes down (Envoy
//     restarted, stat recreated) becomes the new base with a zero delta,
//     never a negative one.
//   - Missing stats: a revision absent from a whole flush gets one zero
//     sample, recorded when the next flush starts (a flush may span several
//     messages when batch_size is set; messages with one timestamp are one
//     flush).
//   - Nodes: a node whose last stream ended is kept for Options.NodeExpiry; a
//     reconnect within it continues its counters, otherwise the node is
//     forgotten and a zero sample is recorded for each of its revisions.
//   - Bad input (see reason names in metrics.go) is counted in
//     thaw_statsink_bad_input_total{reason} and logged at most once a minute
//     per node; the stream stays up except for a missing identifier and
//     messages above the gRPC receive limit (MaxRecvMsgSize).
//
// Cost (the production path: internal/app sets NewCodec, NewBufferPool,
// ServerReadBufferSize and MaxRecvMsgSize on the shared gRPC server):
//
//   - gRPC: the sink's codec (codec.go) keeps a reference to the received
//     HTTP/2 frame buffers and the sink reads the message in place
//     (msgReader, reader.go), copying only the few fields that straddle two
//     frames; no per-stream buffer as large as a flush. Frame buffers come
//     from a pool that does not zero them (bufpool.go), and a connection is
//     read 1 MiB at a time rather than gRPC's 32 KiB (readbuf.go).
//   - Decoding (decode*.go, wire.go): a family thaw does not read is dropped
//     after one name comparison; a metric laid out as Envoy writes it is
//     decoded by byte comparison (envoyMetric), anything else by a walk over
//     its fields. No allocation per metric.
//   - Lookup: a metric's cluster is first guessed from its position in the
//     node's previous message (Envoy's order is stable between flushes),
//     then looked up by the label bytes (no string copy); one entry per
//     cluster and node.
//   - Recording: a message's samples go to the recorder as one
//     autoscaler.Batch (one clock read), each with the entry's
//     autoscaler.Ref, so the Collector finds the revision's series and the
//     node's source without a map lookup. Whether a cluster is missing from
//     the previous flush is known from two counts (node.seenCur,
//     node.seenPrev), not from a walk over every entry.
//
// See BenchmarkIngestGRPC (the whole path into the real Collector),
// BenchmarkIngest (decoding alone) and docs/stats.md.
package statsink
