package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"

	"github.com/thaw-dev/thaw/bench/results"
)

// grpcSide is one way of reaching the gRPC backend: a client connection to
// an Envoy listener with the revision's host as :authority.
type grpcSide struct {
	name   string
	cc     *grpc.ClientConn
	client testpb.TestServiceClient
}

// runGRPCWarm compares the gRPC warm path: thaw's serve mode (Envoy routes
// straight to the backend over h2c) vs a plain Envoy with a static config
// routing over h2c to the same backend process. One constant-rate schedule
// alternates call by call between the sides (paths.go does the same for
// HTTP with vegeta), in rounds; each side has one HTTP/2 connection, as a
// gRPC client normally has.
func runGRPCWarm(e *env, dir string, th *thaw, serveRev h2cRev) (*results.GRPCWarm, error) {
	if err := th.waitStatus(e.ctx, 30*time.Second, "serve mode, 1 ready", func(r revStatus) bool {
		return r.Mode == "serve" && r.Ready == 1
	}, serveRev.name); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(e.ctx, 30*time.Second)
	defer cancel()
	serve, err := newGRPCSide(ctx, "serve", strings.TrimPrefix(th.httpURL, "http://"), serveRev.host())
	if err != nil {
		return nil, err
	}
	defer serve.cc.Close()
	port, err := serve.backendPort(ctx)
	if err != nil {
		return nil, err
	}
	se, err := startStaticEnvoyH2C(e, dir, port)
	if err != nil {
		return nil, err
	}
	defer e.stopLogged(se.process)
	static, err := newGRPCSide(ctx, "static", strings.TrimPrefix(se.httpURL, "http://"), serveRev.host())
	if err != nil {
		return nil, err
	}
	defer static.cc.Close()
	if p, err := static.backendPort(ctx); err != nil || p != port {
		return nil, fmt.Errorf("static Envoy reaches backend port %d (%v), want the serve revision's %d", p, err, port)
	}

	w := &results.GRPCWarm{RateRPS: e.rate, Rounds: 20, RoundSeconds: 2, Workers: 64, Connections: 1}
	if e.quick {
		w.Rounds, w.RoundSeconds = 2, 1
	}
	w.Static.Name, w.Serve.Name = "static", "serve"
	w.Static.Description = "plain Envoy, static config, h2c cluster to the serve revision's backend process"
	w.Serve.Description = "thaw serve mode, h2c revision: Envoy routes straight to the backend"
	round := time.Duration(w.RoundSeconds * float64(time.Second))
	e.logf("protocols: gRPC warm path: warm-up, then %d rounds of %s, static and serve interleaved call by call, %d calls/s per side",
		w.Rounds, round, w.RateRPS)
	pairedCalls(e.ctx, static, serve, w.RateRPS, time.Second, w.Workers, nil, nil)
	var all [2]sample
	for r := range w.Rounds {
		var rs [2]sample
		pairedCalls(e.ctx, static, serve, w.RateRPS, round, w.Workers, &rs[0], &rs[1])
		la, lb := rs[0].latency(), rs[1].latency()
		e.logf("protocols: gRPC round %d static p50 %.3f p99 %.3f ms | serve p50 %.3f p99 %.3f ms (%d+%d calls, %d+%d errors)",
			r+1, la.P50Ms, la.P99Ms, lb.P50Ms, lb.P99Ms, la.Requests, lb.Requests, la.Errors, lb.Errors)
		for i, sd := range []*results.Side{&w.Static, &w.Serve} {
			l := rs[i].latency()
			sd.RoundP50Ms, sd.RoundP99Ms = append(sd.RoundP50Ms, l.P50Ms), append(sd.RoundP99Ms, l.P99Ms)
			all[i].merge(&rs[i])
		}
		if err := e.ctx.Err(); err != nil {
			return w, err
		}
	}
	w.Static.Latency, w.Serve.Latency = all[0].latency(), all[1].latency()
	for i, sd := range []*results.Side{&w.Static, &w.Serve} {
		e.logf("protocols: gRPC %-6s p50 %.3f ms p99 %.3f ms, %d/%d errors %v, %.0f calls/s sent",
			sd.Name, sd.Latency.P50Ms, sd.Latency.P99Ms, sd.Latency.Errors, sd.Latency.Requests, all[i].errs, sd.Latency.RateRPS)
		if sd.Latency.Requests == 0 {
			return w, fmt.Errorf("side %s sent no calls", sd.Name)
		}
	}
	if err := grpcClosedLoop(e, w, th, se, static, serve); err != nil {
		return w, err
	}
	// The serve side must really have been serve mode throughout.
	if err := th.waitStatus(e.ctx, 5*time.Second, "grpc-serve still in serve mode", func(r revStatus) bool {
		return r.Mode == "serve" && r.Ready == 1
	}, serveRev.name); err != nil {
		return w, err
	}
	return w, nil
}

func newGRPCSide(ctx context.Context, name, addr, host string) (*grpcSide, error) {
	cc, err := dialGRPC(ctx, addr, host)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &grpcSide{name: name, cc: cc, client: testpb.NewTestServiceClient(cc)}, nil
}

// backendPort makes one call and returns the backend's port from its
// x-workload-port response header.
func (s *grpcSide) backendPort(ctx context.Context) (int, error) {
	var md metadata.MD
	if _, err := s.client.UnaryCall(ctx, &testpb.SimpleRequest{}, grpc.Header(&md)); err != nil {
		return 0, fmt.Errorf("%s: %w", s.name, err)
	}
	v := md.Get("x-workload-port")
	if len(v) != 1 {
		return 0, fmt.Errorf("%s: x-workload-port = %q", s.name, v)
	}
	p, err := strconv.Atoi(v[0])
	if err != nil {
		return 0, fmt.Errorf("%s: x-workload-port: %w", s.name, err)
	}
	return p, nil
}

// grpcClosedLoop measures each side's calls/s with w.Concurrency calls
// always in flight and the CPU its Envoy spends per call (from /proc), in
// w.ThroughputRounds rounds of w.RoundSeconds, the sides back to back,
// order alternating.
func grpcClosedLoop(e *env, w *results.GRPCWarm, th *thaw, se *staticEnvoy, static, serve *grpcSide) error {
	thawEnvoy, err := childNamed(th.Pid(), "envoy")
	if err != nil {
		return err
	}
	w.Concurrency, w.ThroughputRounds = 16, e.size(6, 1)
	sides := []struct {
		g    *grpcSide
		s    *results.Side
		pid  int
		cpu  time.Duration
		n    float64
		errs int
	}{{g: static, s: &w.Static, pid: se.Pid()}, {g: serve, s: &w.Serve, pid: thawEnvoy}}
	round := time.Duration(w.RoundSeconds * float64(time.Second))
	for r := range w.ThroughputRounds {
		for i := range sides {
			sd := &sides[(i+r)%len(sides)]
			m := startCPU(sd.pid)
			ok, errs := closedLoopCalls(e.ctx, sd.g, w.Concurrency, round)
			used := m.stop()[0]
			rps := float64(ok) / round.Seconds()
			sd.cpu += used
			sd.n += float64(ok)
			sd.s.ThroughputErrors += errs
			sd.s.RoundThroughput = append(sd.s.RoundThroughput, rps)
			if ok > 0 {
				sd.s.RoundEnvoyCPUUs = append(sd.s.RoundEnvoyCPUUs, float64(used.Microseconds())/float64(ok))
			}
			e.logf("protocols: gRPC closed loop round %d %-6s %.0f calls/s (%d errors), CPU envoy %v", r+1, sd.g.name, rps, errs, used)
		}
	}
	for _, sd := range sides {
		sd.s.ThroughputRPS = results.Quantile(sd.s.RoundThroughput, 0.5)
		if sd.n > 0 {
			sd.s.EnvoyCPUUsPerRequest, sd.s.CPURequests = float64(sd.cpu.Microseconds())/sd.n, int64(sd.n)
		}
	}
	return e.ctx.Err()
}

// closedLoopCalls keeps n unary calls to s in flight for d and returns the
// successful and failed calls.
func closedLoopCalls(ctx context.Context, s *grpcSide, n int, d time.Duration) (ok, failed int) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var okN, failN atomic.Int64
	var wg sync.WaitGroup
	req := &testpb.SimpleRequest{}
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				if _, err := s.client.UnaryCall(ctx, req); err == nil {
					okN.Add(1)
				} else if ctx.Err() == nil {
					failN.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	return int(okN.Load()), int(failN.Load())
}

// addCall records one call's outcome.
func (s *sample) addCall(lat time.Duration, err error) {
	s.requests++
	if err != nil {
		s.errors++
		if s.errs == nil {
			s.errs = map[string]int{}
		}
		if len(s.errs) < 10 {
			s.errs[err.Error()]++
		}
		return
	}
	s.latencies = append(s.latencies, results.Millis(lat))
}

// pairedCalls issues unary calls at rate calls/s to each of a and b for d:
// one schedule at 2 × rate whose calls alternate between a and b, started
// by at most workers goroutines (when all are busy the schedule waits, and
// the sent rate shows it). A call's latency runs from its start to its
// return. Results go to sa and sb unless they are nil (warm-up).
func pairedCalls(ctx context.Context, a, b *grpcSide, rate int, d time.Duration, workers int, sa, sb *sample) {
	var mu sync.Mutex
	jobs := make(chan int)
	var wg sync.WaitGroup
	req := &testpb.SimpleRequest{}
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				side, out := a, sa
				if i%2 == 1 {
					side, out = b, sb
				}
				cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				t := time.Now()
				_, err := side.client.UnaryCall(cctx, req)
				lat := time.Since(t)
				cancel()
				if out != nil {
					mu.Lock()
					out.addCall(lat, err)
					mu.Unlock()
				}
			}
		}()
	}
	interval := time.Second / time.Duration(2*rate)
	start := time.Now()
	total := int(d / interval)
send:
	for i := range total {
		if wait := time.Until(start.Add(time.Duration(i) * interval)); wait > 0 {
			time.Sleep(wait)
		}
		select {
		case jobs <- i:
		case <-ctx.Done():
			break send
		}
	}
	span := time.Since(start)
	close(jobs)
	wg.Wait()
	if sa != nil && sb != nil {
		sa.sentSpan += span
		sb.sentSpan += span
	}
}

// staticEnvoyH2CBootstrap is the gRPC baseline: staticEnvoyBootstrap's
// listener (HTTP/1.1 and HTTP/2 clients alike), its cluster speaking
// HTTP/2 with prior knowledge to one backend. No xDS, no ext_proc, no
// stats sink.
func staticEnvoyH2CBootstrap(backendPort int) string {
	return staticBootstrap("static_grpc", backendPort, true)
}

// startStaticEnvoyH2C runs the gRPC baseline Envoy with the same worker
// count as thaw's and waits for its admin /ready.
func startStaticEnvoyH2C(e *env, dir string, backendPort int) (*staticEnvoy, error) {
	ev, err := startEnvoy(e, dir, "static envoy (h2c)", "static-envoy-h2c", staticEnvoyH2CBootstrap(backendPort))
	if err != nil {
		return nil, err
	}
	return &staticEnvoy{process: ev.process, httpURL: ev.url("static_grpc")}, nil
}
