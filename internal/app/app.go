package app

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"
	"k8s.io/utils/clock"

	"github.com/thaw-dev/thaw/activator"
	"github.com/thaw-dev/thaw/autoscaler"
	"github.com/thaw-dev/thaw/autoscaler/statsink"
	"github.com/thaw-dev/thaw/control"
	"github.com/thaw-dev/thaw/egext"
	"github.com/thaw-dev/thaw/extproc"
	"github.com/thaw-dev/thaw/modsvc"
	"github.com/thaw-dev/thaw/revision"
	"github.com/thaw-dev/thaw/xds"
	"github.com/thaw-dev/thaw/xds/translate"
)

// Options configures an App.
type Options struct {
	Logger *zap.Logger
	// Registry is the revision registry the platform feeds (required).
	Registry *revision.Registry
	// NewPlatform builds the platform once the activator exists, so the
	// platform can drain backends through it before stopping them, and
	// registers its metrics on metrics (required).
	NewPlatform func(act *activator.Activator, metrics prometheus.Registerer) (Platform, error)
	// GRPCServerOptions are added to the shared gRPC server's options (for
	// example the Kubernetes platform's leader stream gate).
	GRPCServerOptions []grpc.ServerOption
	// Collectors are registered on thaw's /metrics registry (for example
	// the gRPC port's TLS handshake counters).
	Collectors []prometheus.Collector
	// Elector, when set, runs the autoscaler only while leading.
	Elector Elector
	// GRPCAddress serves xDS, ext_proc and the stats sink (default
	// DefaultGRPCAddress).
	GRPCAddress string
	// AdminAddress serves /metrics, /status, /healthz, /readyz (default
	// DefaultAdminAddress).
	AdminAddress string
	// Pprof serves Go profiles under /debug/pprof/ on the admin address
	// (see IsLoopbackAddress).
	Pprof bool
	// XDS configures translation (listener port, hold budget, ...).
	XDS translate.Config
	// TickInterval is the autoscaler's decision period (default 2 s).
	TickInterval time.Duration
	// RevisionMetrics exports one series per revision for the autoscaler's
	// metrics and the activator's gauges (MultiscalerOptions and
	// activator.Options RevisionMetrics).
	RevisionMetrics bool
	// DrainTimeout bounds how long shutdown waits for held requests (default
	// 30 s).
	DrainTimeout time.Duration
	// ReadyWhenAcked makes /readyz wait until an Envoy ACKed the first
	// snapshot (thaw local); otherwise ready once the platform synced.
	ReadyWhenAcked bool
	// OnReady, when set, is called once when the app first becomes ready,
	// before the start-up garbage is returned to the OS (thaw local
	// restores its start-up GC settings there: internal/startgc).
	OnReady func()
	// Limits bound client-keyed state on the gRPC port (limits.go).
	Limits Limits
	// EGExtension serves Envoy Gateway's EnvoyGatewayExtension hooks
	// (package egext) on the gRPC address, with its TLS, on every replica
	// (never gated by leader election).
	EGExtension bool
	// EGInitialFetchTimeout is the initial_fetch_timeout the EG hooks put
	// on revision clusters (0: egext.DefaultInitialFetchTimeout).
	EGInitialFetchTimeout time.Duration
	// ModuleAddress, with XDS.Module, serves the activator module's state
	// stream and reports on a server of their own, answered by the leader
	// only (thaw run; see mountModule). Empty: on the admin server (thaw
	// local, loopback).
	ModuleAddress string
	// ModuleTLS is that server's TLS (mutual TLS, ALPN http/1.1); nil:
	// plaintext.
	ModuleTLS *tls.Config
	// OnNodeExcluded, when set, is told about each xDS stream thaw closed
	// because it stalled (node id, reason), e.g. to record an Event.
	OnNodeExcluded func(node, reason string)
}

// App is thaw's process: every component wired together. Build it with New,
// then Run it.
type App struct {
	opts      Options
	log       *zap.Logger
	metrics   *prometheus.Registry
	grpc      *grpc.Server
	health    *health.Server
	grpcLn    net.Listener
	admin     *AdminServer
	xds       *xds.Server
	act       *activator.Activator
	ext       *extproc.Server
	sink      *statsink.Server
	collector *autoscaler.Collector
	scaler    *autoscaler.Multiscaler
	modes     *control.Controller
	platform  Platform
	leading   atomic.Bool
	ready     atomic.Bool
	lead      leadership
	moduleSrv *http.Server
	moduleLn  net.Listener
	modsvc    *modsvc.Server // nil without the module
}

// lazyPoker forwards pokes to the multiscaler, which is built after the
// activator (the platform sits between them).
type lazyPoker struct {
	m atomic.Pointer[autoscaler.Multiscaler]
}

func (p *lazyPoker) Poke(key revision.Key) {
	if m := p.m.Load(); m != nil {
		m.Poke(key)
	}
}

// New builds every component and binds the gRPC and admin listeners, so a
// port conflict fails before anything runs.
func New(opts Options) (*App, error) {
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	if opts.Registry == nil || opts.NewPlatform == nil {
		return nil, errors.New("app: Registry and NewPlatform are required")
	}
	if opts.GRPCAddress == "" {
		opts.GRPCAddress = DefaultGRPCAddress
	}
	if opts.AdminAddress == "" {
		opts.AdminAddress = DefaultAdminAddress
	}
	if opts.DrainTimeout <= 0 {
		opts.DrainTimeout = 30 * time.Second
	}
	if err := opts.XDS.Validate(); err != nil {
		return nil, err
	}
	a := &App{opts: opts, log: opts.Logger, metrics: prometheus.NewRegistry()}
	a.metrics.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if err := registerAll(a.metrics, opts.Collectors); err != nil {
		return nil, err
	}
	clk := clock.RealClock{}

	// Windows and per-node stats state only for revisions the registry
	// knows: names a client invents cost a lookup, no memory.
	known := func(k revision.Key) bool { return opts.Registry.Snapshot().Get(k) != nil }
	a.collector = autoscaler.NewCollector(autoscaler.CollectorOptions{Clock: clk, Known: known})
	if err := a.collector.RegisterMetrics(a.metrics); err != nil {
		return nil, err
	}
	xcfg := opts.XDS
	if xcfg.IdleHoldPath && opts.EGExtension {
		// Envoy Gateway's Envoys hold an idle revision's requests through
		// its assignment from thaw: keep it (translate.Config.IdleHoldPath).
		a.log.Warn("idle hold path off: Envoy Gateway's Envoys need every revision's assignment")
		xcfg.IdleHoldPath = false
	}
	a.xds = xds.NewServer(xds.ServerOptions{Logger: a.log.Named("xds"), Config: xcfg, Registerer: a.metrics, Clock: clk,
		Limits: opts.Limits.XDS, OnExcluded: opts.OnNodeExcluded})
	a.modes = control.New(control.Options{Logger: a.log.Named("control"), Clock: clk, Registry: opts.Registry, Confirmer: a.xds})
	poker := &lazyPoker{}
	// The activator's own samples are not recorded: Envoy counts held and
	// activator-routed requests in the revision cluster's upstream_rq_active
	// in both modes, so the stats sink already sees them and adding the
	// activator's view would count them twice.
	a.act = activator.New(activator.Options{Logger: a.log.Named("activator"), Clock: clk, Poker: poker,
		Registerer: a.metrics, RevisionMetrics: opts.RevisionMetrics})
	platform, err := opts.NewPlatform(a.act, a.metrics)
	if err != nil {
		return nil, err
	}
	a.platform = platform
	a.scaler = autoscaler.NewMultiscaler(autoscaler.MultiscalerOptions{Logger: a.log.Named("autoscaler"), Clock: clk,
		Collector: a.collector, Target: platform, Confirmer: a.modes, TickInterval: opts.TickInterval, Registerer: a.metrics,
		RevisionMetrics: opts.RevisionMetrics, Recorder: a.modes})
	poker.m.Store(a.scaler)
	a.ext = extproc.NewServer(extproc.ServerOptions{Logger: a.log.Named("extproc"), Activator: a.act,
		HoldBudget: opts.XDS.HoldBudget, Registerer: a.metrics, Limits: opts.Limits.ExtProc})
	sinkLimits := opts.Limits.StatSink
	sinkLimits.Known = known
	// Samples showing requests on a revision poke the autoscaler, so a
	// request held by another replica's activator (which cannot poke this
	// one) wakes a revision at zero within one stats flush (1 s).
	a.sink = statsink.New(statsink.Options{Logger: a.log.Named("statsink"),
		Recorder: pokingRecorder{Recorder: a.collector, poker: poker, quiet: answersAtZero(opts.Registry),
			single: opts.Elector == nil}, Clock: clk, Registerer: a.metrics, Limits: sinkLimits})

	maxStreams := opts.Limits.MaxStreamsPerConnection
	if maxStreams == 0 {
		maxStreams = extproc.DefaultMaxStreamsPerConnection
	}
	// Server-wide options (codec, buffers, limits): grpcopts.go says what
	// each service gets.
	gopts := append(SharedGRPCServerOptions(),
		grpc.MaxConcurrentStreams(maxStreams),
		chainTaps(a.ext.TapHandle(), a.xds.TapHandle()),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 5 * time.Second, PermitWithoutStream: true}),
	)
	gopts = append(gopts, opts.GRPCServerOptions...)
	a.grpc = grpc.NewServer(gopts...)
	a.health = health.NewServer()
	healthpb.RegisterHealthServer(a.grpc, a.health)
	a.xds.Register(a.grpc)
	a.ext.Register(a.grpc)
	a.sink.Register(a.grpc)
	if opts.EGExtension {
		eg, err := egext.NewServer(a.log.Named("egext"), egext.Options{XDS: opts.XDS, InitialFetchTimeout: opts.EGInitialFetchTimeout,
			Metrics: a.metrics, Clock: clk, Limits: revision.Limits{HoldBudget: opts.XDS.HoldBudget}})
		if err != nil {
			return nil, err
		}
		eg.Register(a.grpc)
	}

	if a.grpcLn, err = listen(ListenPort{Address: opts.GRPCAddress, Flag: "--grpc-address"}); err != nil {
		return nil, fmt.Errorf("grpc listener: %w", err)
	}
	if err := CheckPortsFree(ListenPort{Address: opts.AdminAddress, Flag: "--admin-address"}); err != nil {
		a.grpcLn.Close()
		return nil, fmt.Errorf("admin listener: %w", err)
	}
	if a.admin, err = NewAdminServer(opts.AdminAddress, a.metrics, a, a.ready.Load, opts.Pprof); err != nil {
		a.grpcLn.Close()
		return nil, err
	}
	a.admin.Handle(ExcludedPath, excludedHandler(a.xds))
	if opts.XDS.Module != nil {
		if err := a.mountModule(poker); err != nil {
			a.grpcLn.Close()
			a.admin.ln.Close()
			return nil, err
		}
	}
	return a, nil
}

// GRPCAddress returns the bound gRPC address.
func (a *App) GRPCAddress() string { return a.grpcLn.Addr().String() }

// AdminAddress returns the bound admin address.
func (a *App) AdminAddress() string { return a.admin.Addr() }

// XDS returns the xDS server (to wait for ACKs).
func (a *App) XDS() *xds.Server { return a.xds }

// Activator returns the activator.
func (a *App) Activator() *activator.Activator { return a.act }

// Run runs every component until ctx ends, then shuts down in order: stop
// admitting held requests and drain them (DrainTimeout), stop the platform
// (its backends), stop the gRPC server. It returns the first component
// error, or nil after a clean shutdown.
func (a *App) Run(ctx context.Context) error {
	runCtx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	goRun := func(name string, fn func(context.Context) error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := fn(runCtx); err != nil && !errors.Is(err, context.Canceled) {
				errs <- fmt.Errorf("%s: %w", name, err)
			}
		}()
	}
	reg := a.opts.Registry
	goRun("registry", func(c context.Context) error { reg.Run(c); return nil })
	goRun("xds", func(c context.Context) error { return a.xds.Run(c, reg) })
	goRun("control", func(c context.Context) error { a.modes.Run(c); return nil })
	goRun("activator", func(c context.Context) error { a.act.Run(c, reg); return nil })
	goRun("admin", func(c context.Context) error { a.admin.Run(c, a.log); return nil })
	if a.moduleSrv != nil {
		goRun("module server", a.runModuleServer)
	}
	platformCtx, stopPlatform := context.WithCancel(context.Background())
	defer stopPlatform()
	platformDone := make(chan error, 1)
	go func() { platformDone <- a.platform.Run(platformCtx) }()
	grpcDone := make(chan error, 1)
	go func() { grpcDone <- a.grpc.Serve(a.grpcLn) }()
	goRun("autoscaler", a.runAutoscaler)
	goRun("readiness", a.trackReadiness)
	goRun("hold path", func(c context.Context) error { return a.reportHoldPath(c, clock.RealClock{}) })

	var runErr error
	select {
	case <-ctx.Done():
	case runErr = <-errs:
		a.log.Error("component failed, shutting down", zap.Error(runErr))
	case err := <-platformDone:
		runErr = fmt.Errorf("platform stopped: %w", err)
		platformDone <- err
	case err := <-grpcDone:
		runErr = fmt.Errorf("grpc server stopped: %w", err)
	}
	a.shutdown(stopPlatform, platformDone)
	cancel()
	wg.Wait()
	return runErr
}

func (a *App) shutdown(stopPlatform context.CancelFunc, platformDone chan error) {
	a.log.Info("shutting down: draining held requests", zap.Duration("timeout", a.opts.DrainTimeout))
	a.ready.Store(false)
	a.health.Shutdown()
	dctx, cancel := context.WithTimeout(context.Background(), a.opts.DrainTimeout)
	if err := a.ext.Drain(dctx); err != nil {
		a.log.Warn("drain of held requests incomplete", zap.Error(err))
	}
	cancel()
	stopPlatform()
	if err := <-platformDone; err != nil && !errors.Is(err, context.Canceled) {
		a.log.Warn("platform stopped with error", zap.Error(err))
	}
	a.grpc.Stop()
	a.log.Info("shutdown complete")
}

// runAutoscaler runs the multiscaler while leading (always without an
// Elector) and flips the gRPC health status so Envoy's health checks find
// the leader.
func (a *App) runAutoscaler(ctx context.Context) error {
	lead := func(c context.Context) {
		a.leading.Store(true)
		a.lead.set(true)
		a.health.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
		a.log.Info("leading: running the autoscaler")
		if err := a.scaler.Run(c, a.opts.Registry); err != nil && !errors.Is(err, context.Canceled) {
			a.log.Error("autoscaler stopped", zap.Error(err))
		}
		a.modes.StoppedDeciding() // no decision clears its activation failures any more
	}
	if a.opts.Elector == nil {
		lead(ctx)
		return nil
	}
	a.health.SetServingStatus("", healthpb.HealthCheckResponse_NOT_SERVING)
	a.opts.Elector.Run(ctx, lead, func() {
		a.leading.Store(false)
		a.lead.set(false)
		a.health.SetServingStatus("", healthpb.HealthCheckResponse_NOT_SERVING)
		a.log.Info("stopped leading")
	})
	return nil
}

// trackReadiness marks the app ready once the platform synced and, with
// ReadyWhenAcked, an Envoy ACKed the first snapshot.
func (a *App) trackReadiness(ctx context.Context) error {
	if _, err := a.opts.Registry.WaitFor(ctx, func(s *revision.Snapshot) bool { return s.Synced }); err != nil {
		return nil
	}
	if a.opts.ReadyWhenAcked {
		if err := a.xds.WaitFirstAck(ctx); err != nil {
			return nil
		}
	}
	a.ready.Store(true)
	// Every replica serves ext_proc, leader or not (Envoy fleets check
	// this service on the thaw_extproc cluster).
	a.health.SetServingStatus(extproc.HealthService, healthpb.HealthCheckResponse_SERVING)
	a.log.Info("ready")
	if a.opts.OnReady != nil {
		a.opts.OnReady()
	}
	// Start-up (parsing, the first translation and its marshalling for every
	// revision) leaves garbage several times the live heap; with thousands
	// of revisions the Go runtime would keep it resident for minutes. Give
	// it back once, now that the steady state begins.
	debug.FreeOSMemory()
	return nil
}

// Ready reports whether /readyz answers 200.
func (a *App) Ready() bool { return a.ready.Load() }

// Status returns one row per revision (valid and invalid) for /status;
// StatusOf (status_filter.go) returns one.
func (a *App) Status() []RevisionStatus {
	snap := a.opts.Registry.Snapshot()
	rows := make([]RevisionStatus, 0, snap.Revisions.Len()+len(snap.Invalid))
	now := time.Now()
	for _, rev := range snap.Sorted() {
		rows = append(rows, a.statusRow(rev, now))
	}
	for key, err := range snap.Invalid {
		rows = append(rows, invalidStatusRow(key, err))
	}
	return rows
}

// registerAll registers cs on reg.
func registerAll(reg prometheus.Registerer, cs []prometheus.Collector) error {
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("register metrics: %w", err)
		}
	}
	return nil
}
