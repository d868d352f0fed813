package main

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	metricsv3 "github.com/envoyproxy/go-control-plane/envoy/service/metrics/v3"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"

	"github.com/thaw-dev/thaw/bench/results"
	"github.com/thaw-dev/thaw/revision"
)

// Sizes of the abuse steps (issue 13's reproductions); -quick divides them
// by 10.
const (
	abuseFakeClusters  = 800_000 // in abuseStatsMessages messages
	abuseStatsMessages = 4
	abuseExtprocIdle   = 50_000
	abuseXDSIdle       = 10_000
	// abuseConns spreads the idle streams over a few connections, as a
	// client that wants many would.
	abuseConns = 8
)

// runAbuse starts `thaw local` with one warm revision and replays, with
// real gRPC clients on loopback, the abuses of issue 13: invented cluster
// names in stats, ext_proc streams that never send headers, xDS streams
// that never send a request. After each it records thaw's memory, how many
// abusive streams were refused or closed, and whether a real request still
// works. Run it against an older thaw binary (-thaw) for the figures
// before the bounds.
func runAbuse(e *env) (*results.Abuse, error) {
	dir, err := e.tempDir("abuse")
	if err != nil {
		return nil, err
	}
	real := rev{name: "real", autoscaling: map[string]string{"min-scale": "1"}}
	th, err := startThaw(e.ctx, e, dir, localConfig(e.workloadBin, real))
	if err != nil {
		return nil, err
	}
	defer e.stopLogged(th.process)
	if err := th.waitStatus(e.ctx, time.Minute, "the real revision ready", func(s revStatus) bool { return s.Ready >= 1 },
		real.name); err != nil {
		return nil, err
	}
	scale := 1
	if e.quick {
		scale = 10
	}
	res := &results.Abuse{}
	m, err := scrape(th.adminURL + "/metrics")
	if err != nil {
		return nil, err
	}
	res.BaselineRSSMiB = m["process_resident_memory_bytes"] / (1 << 20)
	a := &abuser{e: e, th: th, real: real}
	for _, step := range []func(int) (results.AbuseStep, error){a.fakeClusters, a.idleExtproc, a.idleXDS} {
		st, err := step(scale)
		if err != nil {
			return res, err
		}
		st.RealRequestOK = a.realRequest()
		e.logf("abuse %s: %+v", st.Name, st)
		res.Steps = append(res.Steps, st)
	}
	return res, nil
}

type abuser struct {
	e    *env
	th   *thaw
	real rev
}

func (a *abuser) dial() (*grpc.ClientConn, error) {
	return grpc.NewClient(a.th.grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallSendMsgSize(128<<20)))
}

// memory returns thaw's RSS and Go heap in use (MiB).
func (a *abuser) memory() (rss, heap float64) {
	m, err := scrape(a.th.adminURL + "/metrics")
	if err != nil {
		return 0, 0
	}
	return m["process_resident_memory_bytes"] / (1 << 20), m["go_memstats_heap_inuse_bytes"] / (1 << 20)
}

func (a *abuser) realRequest() bool {
	c := &http.Client{Timeout: 10 * time.Second}
	req, err := http.NewRequestWithContext(a.e.ctx, http.MethodGet, a.th.httpURL+"/", nil)
	if err != nil {
		return false
	}
	req.Host = a.real.host()
	resp, err := c.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// settle waits d (or until the run ends).
func (a *abuser) settle(d time.Duration) {
	select {
	case <-a.e.ctx.Done():
	case <-time.After(d):
	}
}

// fakeClusters sends cluster stats of revisions that do not exist from
// one node, in a few large messages, as Envoy's metrics_service sink would.
func (a *abuser) fakeClusters(scale int) (results.AbuseStep, error) {
	n := abuseFakeClusters / scale
	st := results.AbuseStep{Name: "stats-fake-clusters", Sent: n,
		Description: fmt.Sprintf("%d invented revision cluster names in %d stats messages from one node", n, abuseStatsMessages)}
	conn, err := a.dial()
	if err != nil {
		return st, err
	}
	defer conn.Close()
	ctx, cancel := context.WithCancel(a.e.ctx)
	defer cancel()
	stream, err := metricsv3.NewMetricsServiceClient(conn).StreamMetrics(ctx)
	if err != nil {
		return st, err
	}
	before, _ := scrape(a.th.adminURL + "/metrics")
	per := n / abuseStatsMessages
	for i := range abuseStatsMessages {
		msg := &metricsv3.StreamMetricsMessage{}
		if i == 0 {
			msg.Identifier = &metricsv3.StreamMetricsMessage_Identifier{Node: &corev3.Node{Id: "abuser"}}
		}
		ts := time.Now().UnixMilli()
		for j := range per {
			name := revision.ClusterName(revision.Key{Namespace: "fake", Name: fmt.Sprintf("r%d", i*per+j)})
			msg.EnvoyMetrics = append(msg.EnvoyMetrics, &dto.MetricFamily{
				Name: proto.String("cluster.upstream_rq_active"), Type: dto.MetricType_GAUGE.Enum(),
				Metric: []*dto.Metric{{TimestampMs: proto.Int64(ts),
					Label: []*dto.LabelPair{{Name: proto.String("envoy.cluster_name"), Value: proto.String(name)}},
					Gauge: &dto.Gauge{Value: proto.Float64(1)}}}})
		}
		if err := stream.Send(msg); err != nil {
			return st, fmt.Errorf("send stats: %w", err)
		}
	}
	// Wait (bounded) until thaw has processed the messages.
	for range 600 {
		m, err := scrape(a.th.adminURL + "/metrics")
		if err == nil && m["thaw_statsink_messages_total"] >= before["thaw_statsink_messages_total"]+abuseStatsMessages {
			break
		}
		a.settle(100 * time.Millisecond)
	}
	st.RSSMiB, st.HeapInuseMiB = a.memory()
	st.AfterSeconds = 5
	a.settle(5 * time.Second)
	st.AfterRSSMiB, st.AfterHeapInuseMiB = a.memory()
	after, _ := scrape(a.th.adminURL + "/metrics")
	st.Refused = int(after[`thaw_statsink_bad_input_total{reason="unknown_revision"}`])
	return st, nil
}

// idleStreams opens n streams with open spread over abuseConns
// connections, waits until thaw has closed them or wait passed, and
// returns the step with memory figures; open returns a func that blocks
// until the stream ends.
func (a *abuser) idleStreams(st results.AbuseStep, n int, wait time.Duration,
	open func(ctx context.Context, conn *grpc.ClientConn) (func() error, error)) (results.AbuseStep, error) {
	st.Sent = n
	conns := make([]*grpc.ClientConn, abuseConns)
	for i := range conns {
		c, err := a.dial()
		if err != nil {
			return st, err
		}
		defer c.Close()
		conns[i] = c
	}
	ctx, cancel := context.WithCancel(a.e.ctx)
	defer cancel()
	var ended atomic.Int64
	var wg sync.WaitGroup
	for i := range n {
		recv, err := open(ctx, conns[i%abuseConns])
		if err != nil {
			ended.Add(1) // refused at once
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if recv() != nil && ctx.Err() == nil {
				ended.Add(1)
			}
		}()
	}
	a.settle(2 * time.Second)
	st.RSSMiB, st.HeapInuseMiB = a.memory()
	start := time.Now()
	for time.Since(start) < wait && ended.Load() < int64(n) && a.e.ctx.Err() == nil {
		a.settle(500 * time.Millisecond)
	}
	st.AfterSeconds = time.Since(start).Seconds() + 2
	st.Refused = int(ended.Load())
	st.AfterRSSMiB, st.AfterHeapInuseMiB = a.memory()
	cancel()
	wg.Wait()
	return st, nil
}

// idleExtproc opens ext_proc streams that never send request headers.
func (a *abuser) idleExtproc(scale int) (results.AbuseStep, error) {
	n := abuseExtprocIdle / scale
	st := results.AbuseStep{Name: "extproc-idle-streams",
		Description: fmt.Sprintf("%d ext_proc streams that never send request headers", n)}
	return a.idleStreams(st, n, 20*time.Second, func(ctx context.Context, conn *grpc.ClientConn) (func() error, error) {
		s, err := extprocv3.NewExternalProcessorClient(conn).Process(ctx)
		if err != nil {
			return nil, err
		}
		return func() error { _, err := s.Recv(); return err }, nil
	})
}

// idleXDS opens delta ADS streams that never send a request.
func (a *abuser) idleXDS(scale int) (results.AbuseStep, error) {
	n := abuseXDSIdle / scale
	st := results.AbuseStep{Name: "xds-idle-streams",
		Description: fmt.Sprintf("%d delta ADS streams that never send a request", n)}
	return a.idleStreams(st, n, 40*time.Second, func(ctx context.Context, conn *grpc.ClientConn) (func() error, error) {
		s, err := discoveryv3.NewAggregatedDiscoveryServiceClient(conn).DeltaAggregatedResources(ctx)
		if err != nil {
			return nil, err
		}
		return func() error { _, err := s.Recv(); return err }, nil
	})
}
