package statsink

import (
	"fmt"
	"net"
	"runtime"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	metricsv3 "github.com/envoyproxy/go-control-plane/envoy/service/metrics/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/thaw-dev/thaw/autoscaler"
	"github.com/thaw-dev/thaw/revision"
)

const (
	benchRevisions = 10000
	benchNodes     = 20
	benchFlushes   = 4 // distinct flushes per node, cycled
)

// countingRecorder counts samples and does nothing else, so the benchmark
// measures the sink, not a collector.
type countingRecorder struct{ n atomic.Int64 }

func (r *countingRecorder) Record(autoscaler.Sample) { r.n.Add(1) }

// benchFlush builds one Envoy flush (without identifier) as the metrics_service sink
// sends it with the stats_matcher of envoy/stats-sink.yaml: per revision
// cluster the counters upstream_rq_total, upstream_rq_5xx, upstream_cx_total
// and the gauges upstream_rq_active, upstream_rq_pending_active,
// upstream_cx_active (counters first, then gauges, one family per stat),
// plus a few server stats.
// cpuTime returns the process's user+system CPU time.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func benchFlush(flush int, clusters []string) *metricsv3.StreamMetricsMessage {
	stats := make([]stat, 0, benchRevisions*6+4)
	total := float64(1000 * (flush + 1))
	for _, c := range clusters {
		stats = append(stats, counter("upstream_rq_total", c, total), counter("upstream_rq_5xx", c, 1),
			counter("upstream_cx_total", c, total/10))
	}
	stats = append(stats, stat{family: "server.envoy_bug_failures", typ: 0, value: 0})
	for i, c := range clusters {
		stats = append(stats, gauge("upstream_rq_active", c, float64(i%7)), gauge("upstream_rq_pending_active", c, 0),
			gauge("upstream_cx_active", c, 2))
	}
	stats = append(stats, stat{family: "server.live", typ: 1, value: 1}, stat{family: "server.uptime", typ: 1, value: 100})
	return envoyMsg("", ts(flush+1), stats...)
}

// BenchmarkIngest measures samples (one per revision per flush) ingested per
// second on one goroutine: gRPC's codec step (unmarshal into emptypb.Empty)
// plus the sink's decoding and state update. 10,000 revision clusters, 20
// nodes, 4 flushes per node cycled (so counters reset once per cycle).
func BenchmarkIngest(b *testing.B) {
	rec := &countingRecorder{}
	sink := New(Options{Recorder: rec, Clock: clocktesting.NewFakeClock(t0)})
	raws := make([][][]byte, benchNodes)
	nodes := make([]*node, benchNodes)
	size := 0
	clusters := benchClusters()
	// One body per flush index, shared by all nodes; the first flush of each
	// node is prefixed with its identifier (concatenated protobuf messages
	// merge, as if Envoy had sent one message).
	bodies := make([][]byte, benchFlushes)
	for f := range benchFlushes {
		body, err := proto.Marshal(benchFlush(f, clusters))
		if err != nil {
			b.Fatal(err)
		}
		bodies[f] = body
		size = len(body)
	}
	for n := range benchNodes {
		id := nodeName(n)
		var err error
		if nodes[n], err = sink.connect(id); err != nil {
			b.Fatal(err)
		}
		head, err := proto.Marshal(envoyMsg(id, 0))
		if err != nil {
			b.Fatal(err)
		}
		raws[n] = append(raws[n], append(head, bodies[0]...))
		raws[n] = append(raws[n], bodies[1:]...)
	}
	now := t0.Add(time.Second)
	codec := encoding.GetCodecV2("proto")
	var msg rawMessage
	// Warm up: every node has seen every cluster once.
	for n := range benchNodes {
		nodes[n].ingest(raws[n][0], now)
	}
	rec.n.Store(0)
	b.SetBytes(int64(size))
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime(b)
	for i := range b.N {
		n := i % benchNodes
		raw := raws[n][(i/benchNodes)%benchFlushes]
		if err := codec.Unmarshal(mem.BufferSlice{mem.SliceBuffer(raw)}, &msg); err != nil {
			b.Fatal(err)
		}
		nodes[n].ingest(msg.b, now)
	}
	b.StopTimer()
	cpu := (cpuTime(b) - cpu0).Seconds()
	secs := b.Elapsed().Seconds()
	b.ReportMetric(float64(rec.n.Load())/secs, "samples/s")
	// Per CPU second of the whole process (GC included): the per-core figure
	// on a machine shared with other work, where wall time overstates cost.
	b.ReportMetric(float64(rec.n.Load())/cpu, "samples/cpu-s")
	b.ReportMetric(float64(b.N)*benchRevisions*3/cpu, "datapoints/cpu-s")
	b.ReportMetric(float64(size), "bytes/msg")
}

// collectorRecorder records into the real autoscaler Collector (as thaw
// wires the sink) and counts samples.
type collectorRecorder struct {
	c *autoscaler.Collector
	n atomic.Int64
}

func (r *collectorRecorder) Record(s autoscaler.Sample) {
	r.c.Record(s)
	r.n.Add(1)
}

// RecordBatch forwards the batch whole, as thaw's recorder does.
func (r *collectorRecorder) RecordBatch(b *autoscaler.Batch) {
	r.c.RecordBatch(b)
	r.n.Add(int64(len(b.Samples)))
}

// BenchmarkIngestGRPC sends the same flushes through a real gRPC stream on
// 127.0.0.1 into the real autoscaler Collector, as thaw wires them: a gRPC
// server with the options internal/app sets for the sink (hostOptions: its codec reads messages in place in
// the frame buffers, which come from the non-zeroing pool), the production
// decoder, and samples recorded as one autoscaler.Batch per message through
// Collector.RecordBatch, as thaw's recorder forwards them. Not included:
// the autoscaler poke thaw's recorder adds per sample with new requests. The
// sender is another process (this test binary, see sender_test.go), so
// samples/cpu-s is what receiving, decoding and recording cost thaw, not
// the load generator.
// ingestWarmup is how many flushes BenchmarkIngestGRPC sends before it
// measures.
const ingestWarmup = 20

func BenchmarkIngestGRPC(b *testing.B) {
	clk := clocktesting.NewFakeClock(t0)
	rec := &collectorRecorder{c: autoscaler.NewCollector(autoscaler.CollectorOptions{Clock: clk})}
	sink := New(Options{Recorder: rec, Clock: clk})
	gs := grpc.NewServer(hostOptions()...)
	sink.Register(gs)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go gs.Serve(ln)
	defer gs.Stop()
	waitSamples := func(want int64) {
		for range 600000 {
			if rec.n.Load() >= want {
				return
			}
			time.Sleep(100 * time.Microsecond)
		}
		b.Fatalf("timed out: %d of %d samples", rec.n.Load(), want)
	}
	snd := startSender(b, ln.Addr().String())
	waitSamples(benchNodes * benchRevisions)
	body, err := proto.Marshal(benchFlush(1, benchClusters()))
	if err != nil {
		b.Fatal(err)
	}
	// Envoy flushes every second for as long as it runs: measure that
	// steady state, not the first flushes (gRPC's buffer pools filling)
	// or the collection of the setup's garbage.
	rec.n.Store(0)
	snd.send(b, ingestWarmup)
	waitSamples(ingestWarmup * benchRevisions)
	runtime.GC()
	rec.n.Store(0)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime(b)
	snd.send(b, b.N)
	waitSamples(int64(b.N) * benchRevisions)
	b.StopTimer()
	cpu := (cpuTime(b) - cpu0).Seconds()
	b.ReportMetric(float64(rec.n.Load())/b.Elapsed().Seconds(), "samples/s")
	b.ReportMetric(float64(rec.n.Load())/cpu, "samples/cpu-s")
}

func benchClusters() []string {
	clusters := make([]string, benchRevisions)
	for i := range clusters {
		clusters[i] = revision.ClusterName(revision.Key{Namespace: fmt.Sprintf("ns-%d", i%50), Name: fmt.Sprintf("app-%d.v1", i)})
	}
	return clusters
}
