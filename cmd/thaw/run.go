package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"k8s.io/client-go/kubernetes"

	"github.com/thaw-dev/thaw/activator"
	"github.com/thaw-dev/thaw/internal/app"
	"github.com/thaw-dev/thaw/internal/tlsreload"
	"github.com/thaw-dev/thaw/platform/kube"
	"github.com/thaw-dev/thaw/revision"
	"github.com/thaw-dev/thaw/xds/translate"
)

type runFlags struct {
	accessLog        string
	dev              bool
	kubeconfig       string
	watchNamespace   string
	workloadSelector string
	podSelector      string
	revisions        string
	leaderElect      bool
	leaseNamespace   string
	leaseName        string
	identity         string
	leaseDuration    time.Duration
	renewDeadline    time.Duration
	retryPeriod      time.Duration
	grpcAddress      string
	adminAddress     string
	httpAddress      string
	httpPort         int
	tick             time.Duration
	revMetrics       bool
	holdBudget       time.Duration
	msgTimeout       time.Duration
	inlineRoutes     bool
	onDemand         onDemandFlags
	idleHoldPath     idleHoldPathFlag
	drainTimeout     time.Duration
	statusInterval   time.Duration
	limits           app.Limits
	files            runFiles
	tls              tlsreload.Files
	pprof            bool
	eg               egFlags
	module           fleetModuleFlags
}

func newRunCmd(g *globalFlags) *cobra.Command {
	f := &runFlags{}
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Run thaw in a Kubernetes cluster (revisions from annotated workloads)",
		Long: `thaw run serves xDS, ext_proc and the stats sink to an Envoy fleet and
manages revisions from Deployments and StatefulSets annotated with
thaw.dev/hosts. With --leader-elect (default) several replicas may run: the
leader decides and patches /scale, and Envoy's streams follow the leader.
See docs/kubernetes.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runWithSignals(cmd, g, func(ctx context.Context, logger *zap.Logger) error {
				f.dev = g.dev
				return runKube(ctx, logger, f, cmd.Flags())
			})
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig path (default: in-cluster, then $KUBECONFIG or ~/.kube/config)")
	fl.StringVar(&f.watchNamespace, "watch-namespace", "", "only watch workloads in this namespace (default: all)")
	fl.StringVar(&f.workloadSelector, "workload-selector", "", "label selector for Deployments and StatefulSets")
	fl.StringVar(&f.podSelector, "pod-selector", "", "label selector for Pods (narrows the pod informer)")
	fl.StringVar(&f.revisions, "revisions", "auto", "watch Revision objects (thaw.dev/v1alpha1): auto (when the CRD is served at start), on (fail without it), off (annotated workloads only)")
	fl.BoolVar(&f.leaderElect, "leader-elect", true, "elect a leader among replicas (Lease); only the leader scales")
	fl.StringVar(&f.leaseNamespace, "lease-namespace", kube.DefaultLeaseNamespace(), "namespace of the leader Lease")
	fl.StringVar(&f.leaseName, "lease-name", "thaw", "name of the leader Lease")
	fl.StringVar(&f.identity, "identity", kube.DefaultIdentity(), "this replica's identity in the Lease")
	fl.DurationVar(&f.leaseDuration, "lease-duration", 15*time.Second, "leader Lease duration")
	fl.DurationVar(&f.renewDeadline, "renew-deadline", 10*time.Second, "leader renew deadline")
	fl.DurationVar(&f.retryPeriod, "retry-period", 2*time.Second, "leader election retry period")
	fl.StringVar(&f.grpcAddress, "grpc-address", app.DefaultGRPCAddress, "address thaw serves xDS, ext_proc and stats on (in a pod: $(POD_IP):18000)")
	fl.StringVar(&f.adminAddress, "admin-address", app.DefaultAdminAddress, "admin HTTP address (/metrics, /status, /healthz, /readyz)")
	fl.StringVar(&f.httpAddress, "http-address", "0.0.0.0", "address of the Envoy fleet's HTTP listener")
	fl.IntVar(&f.httpPort, "http-port", app.DefaultHTTPPort, "port of the Envoy fleet's HTTP listener")
	fl.DurationVar(&f.tick, "tick", 2*time.Second, "autoscaler decision period per revision")
	fl.StringVar(&f.accessLog, "access-log", "", "JSON access log path inside the Envoy fleet's pods for listener thaw_http (default: off; with --dev, /dev/stdout)")
	fl.BoolVar(&f.revMetrics, "revision-metrics", false, "export one series per revision and autoscaler or activator gauge (docs/metrics.md); off: sums over all revisions only")
	fl.DurationVar(&f.holdBudget, "hold-budget", translate.DefaultHoldBudget, "longest a request may be held (>= every revision's hold-timeout)")
	f.idleHoldPath.add(fl)
	f.onDemand.add(fl)
	fl.DurationVar(&f.msgTimeout, "ext-proc-message-timeout", translate.DefaultExtProcMessageTimeout,
		"how long Envoy waits for the activator's first answer to a request before failing it (held requests are extended to the hold budget)")
	fl.DurationVar(&f.drainTimeout, "drain-timeout", 30*time.Second, "how long shutdown waits for held requests")
	fl.BoolVar(&f.inlineRoutes, "inline-routes", false,
		"send every virtual host inside route configuration thaw_http (resent whole on each host change) instead of over VHDS; only for Envoys on state-of-the-world ADS")
	fl.DurationVar(&f.statusInterval, "status-interval", 5*time.Second, "least time between thaw.dev/status patches per workload")
	fl.IntVar(&f.files.envoyFiles, "envoy-open-files", defaultFleetOpenFiles,
		"open-file limit (nofile) of each Envoy of the fleet: split like thaw local's into Envoy's own files, thaw_activator_dst's connections (at most 4096) and the requests held at once (docs/reliability.md, \"Open files\")")
	fl.IntVar(&f.files.maxHeld, "max-held", 0,
		"most requests held at once; past it a request that would wait gets 503 + Retry-After (outcome held_limit). With --activator=module: per Envoy, by each Envoy's module over all revisions (the bound protects each Envoy's open files); with --activator=extproc: per thaw replica, over all revisions and the Envoys whose ext_proc streams it serves. 0: what --envoy-open-files leaves for them; -1: no bound")
	addLimitFlags(fl, &f.limits)
	fl.StringVar(&f.tls.CertFile, "tls-cert-file", "", "serve gRPC with mutual TLS: thaw's certificate (PEM; reloaded when it changes). Needs --tls-key-file and --tls-client-ca-file; empty: plaintext")
	fl.StringVar(&f.tls.KeyFile, "tls-key-file", "", "private key of --tls-cert-file (PEM)")
	fl.StringVar(&f.tls.ClientCAFile, "tls-client-ca-file", "", "CA bundle (PEM) that signs the Envoy fleet's client certificates; other clients are refused at the handshake")
	f.eg.add(fl)
	f.module.add(fl)
	fl.BoolVar(&f.pprof, "pprof", false, "serve Go profiles under /debug/pprof/ on --admin-address (off: the admin port is reachable from the pod network)")
	return cmd
}

func runKube(ctx context.Context, logger *zap.Logger, f *runFlags, fl *pflag.FlagSet) error {
	cfg, err := kube.LoadRESTConfig(f.kubeconfig)
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("kubernetes client: %w", err)
	}
	var elector *kube.Elector
	gopts, tlsMetrics, err := grpcTLS(logger, f.grpcAddress, f.tls)
	if err != nil {
		return err
	}
	if f.leaderElect {
		elector, err = kube.NewElector(kube.ElectorOptions{Logger: logger.Named("election"), Client: client,
			Namespace: f.leaseNamespace, LeaseName: f.leaseName, Identity: f.identity,
			LeaseDuration: f.leaseDuration, RenewDeadline: f.renewDeadline, RetryPeriod: f.retryPeriod})
		if err != nil {
			return err
		}
		gate := kube.NewStreamGate(nil, 0)
		gopts = append(gopts, grpc.ChainStreamInterceptor(gate.StreamInterceptor()))
		elector.Observe(gate.SetLeader)
	}
	reg := revision.NewRegistry(revision.RegistryOptions{Logger: logger.Named("registry"), Holdoff: revision.DefaultHoldoff})
	xcfg := translate.DefaultConfig()
	xcfg.HTTPAddress, xcfg.HTTPPort, xcfg.HoldBudget = f.httpAddress, uint32(f.httpPort), f.holdBudget
	xcfg.AccessLogPath = f.accessLog
	if xcfg.AccessLogPath == "" && f.dev {
		xcfg.AccessLogPath = "/dev/stdout"
	}
	xcfg.ExtProcMessageTimeout = f.msgTimeout
	xcfg.InlineRoutes = f.inlineRoutes
	maxHeld, err := f.files.budget(logger, &xcfg)
	if err != nil {
		return err
	}
	if xcfg.Module, err = f.module.moduleConfig(); err != nil {
		return err
	}
	xcfg.IdleHoldPath = f.idleHoldPath.resolve(logger, fl, xcfg.Module != nil, f.eg.enabled)
	if err := f.onDemand.apply(logger, &xcfg, f.eg.enabled); err != nil {
		return err
	}
	var moduleAddress string
	var modTLS *tls.Config
	if xcfg.Module != nil {
		if modTLS, err = moduleTLS(logger, f.tls); err != nil {
			return err
		}
		moduleAddress = f.module.address
		logger.Info("activator: dynamic module in the fleet's Envoys", zap.String("module", xcfg.Module.Path),
			zap.String("moduleAddress", moduleAddress), zap.String("bridge", xcfg.Module.StateURL))
	}
	var kp *kube.Platform
	opts := app.Options{
		Logger:   logger,
		Registry: reg,
		NewPlatform: func(act *activator.Activator, metrics prometheus.Registerer) (app.Platform, error) {
			act.SetMaxHeld(maxHeld)
			p, err := kube.New(kube.Options{Logger: logger.Named("kube"), Client: client, RESTConfig: cfg, Registry: reg,
				Defaults: revision.DefaultSpec(), Limits: revision.Limits{HoldBudget: f.holdBudget}, Namespace: f.watchNamespace, LabelSelector: f.workloadSelector,
				PodLabelSelector: f.podSelector, Registerer: metrics, Elected: elector != nil, StatusInterval: f.statusInterval,
				Load: act, Revisions: revisionsMode(f.revisions)})
			if err != nil {
				return nil, err
			}
			if elector != nil {
				elector.Observe(p.SetLeader)
			}
			kp = p
			return p, nil
		},
		GRPCServerOptions:     gopts,
		Collectors:            tlsMetrics,
		GRPCAddress:           f.grpcAddress,
		AdminAddress:          f.adminAddress,
		Pprof:                 f.pprof,
		EGExtension:           f.eg.enabled,
		EGInitialFetchTimeout: f.eg.initialFetch,
		XDS:                   xcfg,
		TickInterval:          f.tick,
		RevisionMetrics:       f.revMetrics,
		DrainTimeout:          f.drainTimeout,
		Limits:                f.limits,
		ModuleAddress:         moduleAddress,
		ModuleTLS:             modTLS,
	}
	if elector != nil {
		opts.Elector = elector
	}
	a, err := app.New(opts)
	if err != nil {
		return err
	}
	// RevisionSplit and Revision statuses report the translation's
	// verdict on the fleet (a split whose Revision it left out, or a
	// Revision it left out, is not Ready).
	if kp != nil {
		kp.SetRouteVerdicts(a.XDS())
	}
	logger.Info("thaw run started", zap.String("grpc", a.GRPCAddress()), zap.String("admin", a.AdminAddress()),
		zap.String("module", a.ModuleAddress()),
		zap.Bool("leaderElect", f.leaderElect), zap.String("identity", f.identity), zap.Bool("mTLS", f.tls.CertFile != ""))
	return a.Run(ctx)
}

// revisionsMode maps the --revisions flag to kube.RevisionsMode ("auto" is
// the zero value; kube.New rejects anything unknown).
func revisionsMode(v string) kube.RevisionsMode {
	if v == "auto" {
		return kube.RevisionsAuto
	}
	return kube.RevisionsMode(v)
}
