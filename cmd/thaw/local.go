package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"
	"go.uber.org/zap"
	"k8s.io/utils/clock"

	"github.com/thaw-dev/thaw/activator"
	"github.com/thaw-dev/thaw/envoy"
	"github.com/thaw-dev/thaw/internal/app"
	"github.com/thaw-dev/thaw/internal/startgc"
	"github.com/thaw-dev/thaw/platform/local"
	"github.com/thaw-dev/thaw/revision"
	"github.com/thaw-dev/thaw/xds"
	"github.com/thaw-dev/thaw/xds/translate"
)

type localFlags struct {
	file           string
	envoyBin       string
	httpAddress    string
	httpPort       int
	grpcAddress    string
	adminAddress   string
	envoyAdminPort int
	nodeID         string
	stateDir       string
	tick           time.Duration
	revMetrics     bool
	holdBudget     time.Duration
	idleHoldPath   idleHoldPathFlag
	onDemand       onDemandFlags
	msgTimeout     time.Duration
	drainTimeout   time.Duration
	envoyWorkers   int
	envoyFiles     int
	accessLog      string
	reload         time.Duration
	dev            bool
	limits         app.Limits
	eg             egFlags
	activator      activatorFlags
}

func newLocalCmd(g *globalFlags) *cobra.Command {
	f := &localFlags{}
	cmd := &cobra.Command{
		Use:   "local -f FILE",
		Short: "Run thaw on the embedded default: local processes as backends, a real Envoy",
		Long: `thaw local runs every component in one process with revisions from a YAML
file. Each backend is a local process on a free loopback port. thaw renders
an Envoy bootstrap, starts Envoy (--envoy, $ENVOY_BIN or the one ` + "`make tools`" + `
installs), waits until Envoy has acknowledged the first configuration and
prints where to send traffic. SIGINT or SIGTERM drains held requests, stops
the processes and Envoy, and exits 0.

Requests that must wait (a revision at zero, or at its container
concurrency) are held inside Envoy by the activator module
(` + moduleFileName + ` next to the thaw binary, built by ` + "`make build`" + `). When the
file is missing or this Envoy cannot load it, thaw falls back to the
ext_proc activator and logs why (metric thaw_activator_info);
--activator=extproc chooses ext_proc, --activator=module makes an
unavailable module an error.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runWithSignals(cmd, g, func(ctx context.Context, logger *zap.Logger) error {
				f.dev = g.dev
				return runLocal(ctx, logger, f, cmd)
			})
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.file, "file", "f", "", "revisions file (YAML); see examples/local.yaml")
	fl.StringVar(&f.envoyBin, "envoy", "", "Envoy binary (default $ENVOY_BIN, then .tools/bin/envoy, then envoy on $PATH)")
	fl.StringVar(&f.httpAddress, "http-address", "127.0.0.1", "address of Envoy's HTTP listener")
	fl.IntVar(&f.httpPort, "http-port", app.DefaultHTTPPort, "port of Envoy's HTTP listener")
	fl.StringVar(&f.grpcAddress, "grpc-address", app.DefaultGRPCAddress, "address thaw serves xDS, ext_proc and stats on")
	fl.StringVar(&f.adminAddress, "admin-address", app.DefaultAdminAddress, "address of thaw's admin HTTP server (/metrics, /status)")
	fl.IntVar(&f.envoyAdminPort, "envoy-admin-port", app.DefaultEnvoyAdminPort, "Envoy admin port on 127.0.0.1")
	fl.StringVar(&f.nodeID, "node-id", "thaw-local", "Envoy node id")
	fl.StringVar(&f.stateDir, "state-dir", "", "where Envoy's bootstrap, log and pid file live (default: user cache dir)")
	fl.DurationVar(&f.tick, "tick", 2*time.Second, "autoscaler decision period per revision")
	fl.BoolVar(&f.revMetrics, "revision-metrics", false, "export one series per revision and autoscaler or activator gauge (docs/metrics.md); off: sums over all revisions only")
	fl.DurationVar(&f.holdBudget, "hold-budget", translate.DefaultHoldBudget, "longest a request may be held (>= every revision's hold-timeout)")
	f.idleHoldPath.add(fl)
	f.onDemand.add(fl)
	fl.DurationVar(&f.msgTimeout, "ext-proc-message-timeout", translate.DefaultExtProcMessageTimeout,
		"how long Envoy waits for the activator's first answer to a request before failing it (held requests are extended to the hold budget)")
	fl.DurationVar(&f.drainTimeout, "drain-timeout", 30*time.Second, "how long shutdown waits for held requests")
	fl.IntVar(&f.envoyWorkers, "envoy-concurrency", 2, "Envoy worker threads")
	fl.IntVar(&f.envoyFiles, "envoy-open-files", 0, "Envoy's open-file limit (RLIMIT_NOFILE; default: the hard limit, `ulimit -Hn`); "+
		"it bounds the activator's connections to backends and the requests it holds (docs/reliability.md)")
	fl.StringVar(&f.accessLog, "access-log", "", "Envoy JSON access log file for listener thaw_http (default: off; with --dev, access.log in the state dir)")
	fl.DurationVar(&f.reload, "reload-interval", local.DefaultWatchInterval,
		"how often the revisions file is checked for changes, applied without a restart (0: never)")
	f.eg.add(fl)
	f.activator.add(fl)
	addLimitFlags(fl, &f.limits)
	_ = cmd.MarkFlagRequired("file")
	return cmd
}

func runLocal(ctx context.Context, logger *zap.Logger, f *localFlags, cmd *cobra.Command) error {
	var bin string
	var err error
	if !f.eg.enabled {
		if bin, err = findEnvoy(f.envoyBin); err != nil {
			return err
		}
	}
	// A larger GOGC until ready, over the start's garbage
	// (internal/startgc), for a JSON config file only. Measured at 100,000
	// revisions (docs/scaling.md): with a YAML file it saved no CPU and
	// raised the peak RSS by a third to a half.
	var gc *startgc.Start
	if local.LooksJSON(f.file) {
		gc = startgc.Raise(logger, startgc.Settings{Getenv: os.Getenv, MemoryBytes: startgc.Memory()})
		defer gc.Restore("stopped before ready")
	}
	defaults := revision.DefaultSpec()
	cfg, err := local.LoadWithin(f.file, defaults, revision.Limits{HoldBudget: f.holdBudget})
	if err != nil {
		return err
	}
	if cfg.FastJSON {
		logger.Info("config file read as plain JSON, without the YAML parser", zap.Int("revisions", len(cfg.Revisions)))
	}
	if gc != nil && !cfg.FastJSON {
		gc.Restore("config file read through YAML")
	}
	for _, e := range cfg.Errors {
		logger.Error("invalid revision skipped; the others start", zap.Error(e))
	}
	stateDir := f.stateDir
	if stateDir == "" {
		if stateDir, err = defaultStateDir(f); err != nil {
			return err
		}
	}
	reg := revision.NewRegistry(revision.RegistryOptions{Logger: logger.Named("registry"), Holdoff: revision.DefaultHoldoff})
	xcfg := translate.DefaultConfig()
	var files app.FileBudget
	if !f.eg.enabled {
		if files, err = envoyFileBudget(logger, f.envoyFiles, &xcfg); err != nil {
			return err
		}
	}
	xcfg.HTTPAddress, xcfg.HTTPPort, xcfg.HoldBudget = f.httpAddress, uint32(f.httpPort), f.holdBudget
	xcfg.ExtProcMessageTimeout = f.msgTimeout
	xcfg.AccessLogPath = f.accessLog
	if xcfg.AccessLogPath == "" && f.dev {
		xcfg.AccessLogPath = filepath.Join(stateDir, "access.log")
	}
	f.activator.explicit = cmd.Flags().Changed("activator")
	act, err := f.activator.choose(logger, chooseEnv{envoy: bin, eg: f.eg.enabled, adminAddress: f.adminAddress, node: f.nodeID})
	if err != nil {
		return err
	}
	xcfg.Module = act.Module
	xcfg.IdleHoldPath = f.idleHoldPath.resolve(logger, cmd.Flags(), xcfg.Module != nil, f.eg.enabled)
	if err := f.onDemand.apply(logger, &xcfg, f.eg.enabled); err != nil {
		return err
	}
	if xcfg.Module != nil && f.eg.enabled {
		// EG's Envoys (on this host) load the module and reach thaw's
		// admin address directly; each names itself (--service-node), so
		// the extension server leaves the node out (docs/envoy-gateway.md).
		logger.Info("activator: dynamic module in Envoy Gateway's Envoys (translation.listener.includeAll needed)")
	}
	if xcfg.Module != nil {
		logger.Info("activator: dynamic module in Envoy", zap.String("module", xcfg.Module.Path),
			zap.String("state", xcfg.Module.StateURL))
	} else if act.Fallback == "" {
		logger.Info("activator: ext_proc (--activator=extproc)")
	}
	if xcfg.AccessLogPath != "" {
		logger.Info("envoy access log", zap.String("path", xcfg.AccessLogPath))
	}
	var a *app.App                    // set before a.Run, which starts the platform
	var promReg prometheus.Registerer // set by NewPlatform (in app.New)
	a, err = app.New(app.Options{
		Logger:   logger,
		Registry: reg,
		NewPlatform: func(ext *activator.Activator, metrics prometheus.Registerer) (app.Platform, error) {
			if err := registerActivatorInfo(metrics, act); err != nil {
				return nil, fmt.Errorf("activator metric: %w", err)
			}
			// Envoy's own refusals (4xx/5xx it answered itself) on /metrics.
			// Not in EG mode: EG's Envoy answers those, on its own admin port.
			if !f.eg.enabled {
				if err := metrics.Register(envoy.RefusalCollector(fmt.Sprintf("http://127.0.0.1:%d", f.envoyAdminPort))); err != nil {
					return nil, fmt.Errorf("envoy refusal metrics: %w", err)
				}
				ext.SetMaxHeld(files.MaxHeld)
				promReg = metrics
			}
			plat := local.New(local.Options{Logger: logger.Named("local"), Registry: reg, Config: cfg,
				Drainer: drainer{ext}, StateDir: stateDir,
				Router: router{reg: reg, xds: func() *xds.Server { return a.XDS() }},
				Load:   newEnvoyLoad(f.envoyAdminPort)})
			if f.reload > 0 {
				go plat.Watch(ctx, f.file, f.reload, clock.RealClock{}, func() (*local.Config, error) {
					return local.LoadWithin(f.file, defaults, revision.Limits{HoldBudget: f.holdBudget})
				})
			}
			return plat, nil
		},
		GRPCAddress:     f.grpcAddress,
		AdminAddress:    f.adminAddress,
		XDS:             xcfg,
		TickInterval:    f.tick,
		RevisionMetrics: f.revMetrics,
		DrainTimeout:    f.drainTimeout,
		ReadyWhenAcked:  !f.eg.enabled,
		OnReady:         func() { gc.Restore("ready") },
		Limits:          f.limits,
		Pprof:           app.IsLoopbackAddress(f.adminAddress),

		EGExtension:           f.eg.enabled,
		EGInitialFetchTimeout: f.eg.initialFetch,
	})
	if err != nil {
		return err
	}
	if f.eg.enabled {
		// Envoy Gateway's Envoy is the data plane: it fetches the
		// revisions' endpoints from thaw (non-ADS EDS); no Envoy of our own.
		logger.Info("Envoy Gateway extension mode: no Envoy started; EG's Envoy reaches thaw at the gRPC address",
			zap.String("grpc", a.GRPCAddress()))
		return a.Run(ctx)
	}
	grpcAddr := a.GRPCAddress()
	bootstrap, err := envoy.RenderBootstrap(envoy.BootstrapParams{
		NodeID: f.nodeID, Cluster: "thaw-local",
		XDSAddress: grpcAddr, ExtProcAddress: grpcAddr, StatsAddress: grpcAddr,
		AdminPort: uint32(f.envoyAdminPort),
	})
	if err != nil {
		return fmt.Errorf("render envoy bootstrap: %w", err)
	}
	proc, err := app.StartOrAdoptEnvoy(app.EnvoyProcessOptions{Logger: logger.Named("envoy"), Binary: bin,
		StateDir: stateDir, Bootstrap: bootstrap, AdminPort: f.envoyAdminPort, Concurrency: f.envoyWorkers,
		FreePorts: envoyPorts(f)})
	if err != nil {
		return err
	}
	watch, err := watchEnvoyFiles(logger, proc, files, promReg)
	if err != nil {
		return err
	}

	// runCtx is not derived from ctx: on SIGTERM Envoy's listener drains
	// first (no new connections, requests in flight finish within the
	// drain timeout), then the app stops (held requests, backends).
	runCtx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- a.Run(runCtx) }()
	go watch.Run(runCtx)
	go func() {
		select {
		case <-proc.Done():
			logger.Error("envoy exited; stopping thaw")
		case <-ctx.Done():
			dctx, dcancel := context.WithTimeout(context.Background(), f.drainTimeout)
			if err := proc.DrainListeners(dctx); err != nil {
				logger.Warn("envoy listener drain incomplete", zap.Error(err))
			}
			dcancel()
		case <-runCtx.Done():
		}
		cancel()
	}()
	startErr, watchDone := make(chan error, 1), make(chan struct{})
	go func() {
		defer close(watchDone)
		err := watchStart(runCtx, a.XDS(), proc, f)
		switch {
		case err == nil:
			printWelcome(cmd, f, cfg, a)
		case errors.Is(err, errNoFirstAck):
			logger.Error("envoy did not acknowledge the first configuration", zap.Error(err))
		case errors.Is(err, context.Canceled): // shutting down
		default:
			// A port taken or Envoy gone: nothing will ever be served.
			startErr <- err
			cancel()
		}
	}()
	runErr := <-done
	cancel()
	<-watchDone // its error, if any, is in startErr now
	proc.Stop(10 * time.Second)
	select {
	case err := <-startErr:
		return err
	default:
	}
	if runErr != nil {
		return runErr
	}
	select {
	case <-proc.Done():
	default:
	}
	if ctx.Err() == nil && runCtx.Err() != nil {
		return errors.New("envoy exited unexpectedly")
	}
	return nil
}

func printWelcome(cmd *cobra.Command, f *localFlags, cfg *local.Config, a *app.App) {
	out := cmd.OutOrStdout()
	fmt.Fprintf(out, "\nthaw is ready. Envoy listens on http://%s:%d\n", f.httpAddress, f.httpPort)
	writeRevisionList(out, cfg, f.httpAddress, f.httpPort, welcomeRevisions)
	fmt.Fprintf(out, "Status: thaw status --admin-address %s   Metrics: http://%s/metrics\n\n", a.AdminAddress(), a.AdminAddress())
}

// welcomeRevisions is how many revisions the ready message lists.
const welcomeRevisions = 20

// writeRevisionList writes one curl line per revision with a host (its tag
// host when it has one, the host that reaches only it), at most limit of
// them, then how many more there are.
func writeRevisionList(out io.Writer, cfg *local.Config, addr string, port, limit int) {
	listed, more := 0, 0
	for _, rc := range cfg.Revisions {
		if len(rc.Spec.Hosts) == 0 {
			continue
		}
		if listed == limit {
			more++
			continue
		}
		host := rc.Spec.Hosts[0]
		if th := rc.Spec.TagHost(); th != "" {
			host = th
		}
		fmt.Fprintf(out, "  %-20s curl -H 'Host: %s' http://%s:%d/\n", rc.Key.String(), host, addr, port)
		listed++
	}
	if more > 0 {
		fmt.Fprintf(out, "  ... and %d more revisions (thaw status lists them all)\n", more)
	}
}

// findEnvoy returns the Envoy binary from the flag, $ENVOY_BIN, the
// `make tools` install next to the working directory, or $PATH.
func findEnvoy(flag string) (string, error) {
	for _, c := range []string{flag, os.Getenv("ENVOY_BIN"), filepath.Join(".tools", "bin", "envoy")} {
		if c == "" {
			continue
		}
		if _, err := os.Stat(c); err == nil {
			return filepath.Abs(c)
		}
		if c == flag {
			return "", fmt.Errorf("--envoy %s: not found", c)
		}
	}
	if p, err := execLookPath("envoy"); err == nil {
		return p, nil
	}
	return "", errors.New("no Envoy binary: run `make tools`, or pass --envoy or set ENVOY_BIN")
}

// defaultStateDir is per listener port so several `thaw local` can run.
func defaultStateDir(f *localFlags) (string, error) {
	base, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("state dir: %w (pass --state-dir)", err)
	}
	return filepath.Join(base, "thaw", "local-"+strconv.Itoa(f.httpPort)), nil
}
