package xds

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	endpointservice "github.com/envoyproxy/go-control-plane/envoy/service/endpoint/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	serverv3 "github.com/envoyproxy/go-control-plane/pkg/server/v3"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"k8s.io/utils/clock"

	"github.com/thaw-dev/thaw/revision"
	"github.com/thaw-dev/thaw/xds/ack"
	"github.com/thaw-dev/thaw/xds/cache"
	"github.com/thaw-dev/thaw/xds/memo"
	"github.com/thaw-dev/thaw/xds/translate"
)

// ErrAlreadyRunning is returned by Run when another Run is in progress.
var ErrAlreadyRunning = errors.New("xds: server already running")

// resourceTypes are the types thaw serves, in make-before-break order.
// Virtual hosts (VHDS) come last: Envoy subscribes to them once it has
// route configuration thaw_http.
var resourceTypes = []string{resourcev3.ClusterType, resourcev3.EndpointType, resourcev3.ListenerType,
	resourcev3.RouteType, resourcev3.VirtualHostType}

// ServerOptions configures NewServer.
type ServerOptions struct {
	// Logger defaults to a no-op logger.
	Logger *zap.Logger
	// Config is used for every translation; it is validated by Run.
	Config translate.Config
	// Registerer receives the server's metrics; nil registers nothing.
	Registerer prometheus.Registerer
	// Clock defaults to the real clock.
	Clock clock.Clock
	// Limits bound nodes, streams and how long a stream may leave a
	// response unanswered (limits.go).
	Limits Limits
	// OnExcluded, when set, is called (from the stall check goroutine) for
	// each stream thaw closed as stalled, with the node id and the reason,
	// e.g. to record a Kubernetes Event.
	OnExcluded func(node, reason string)
}

// Server is thaw's xDS control plane: it follows the revision registry,
// translates each snapshot, applies the difference to per-type
// go-control-plane LinearCaches (so a mode flip sends one
// ClusterLoadAssignment), serves them over ADS (delta and state of the
// world) and tracks per stream which versions Envoy ACKed or NACKed.
type Server struct {
	log     *zap.Logger
	cfg     translate.Config
	clock   clock.Clock
	metrics *metrics
	// caches serve listeners and routes (a handful of resources); deltas
	// serve endpoints, clusters and virtual hosts (one or more per
	// revision).
	caches  map[string]*cachev3.LinearCache
	deltas  map[string]*cache.Delta
	gate    *cache.Gate
	xds     serverv3.Server
	stop    context.CancelFunc
	tracker *ack.Tracker
	notify  *notifier
	// beforeWait, set by tests only, runs on Run's goroutine just before
	// Run waits for its next event.
	beforeWait atomic.Pointer[func()]
	running    atomic.Bool

	// Owned by the Run goroutine. applied and versions hold what was
	// applied to the LinearCaches (listeners, routes); the deltas hold
	// their own (cache.Delta Versions, Held).
	tr       *memo.Translator
	prevSnap *revision.Snapshot
	// stage is a full apply waiting for ACKs before its next step
	// (stage.go); nil when none. Only Run's goroutine touches it.
	stage *staged
	// splits are revisions whose added endpoints wait for the removal
	// sent first (removal_first.go). Only Run's goroutine touches it.
	splits map[revision.Key]*pendingSplit
	// modules, when set, is waited for by splits too (module_states.go).
	modules  atomic.Pointer[moduleStatesRef]
	applied  map[string]map[string]types.Resource
	versions map[string]map[string]string

	mu      sync.RWMutex
	revs    map[revision.Key]appliedRevision
	skipped map[revision.Key]error
	// skippedSplits: the fleet splits left out of the last translation
	// (apply goroutine only; splits.go).
	skippedSplits map[revision.Key]error
	// splitVerdicts publishes skippedSplits to readers (SplitVerdicts):
	// immutable, swapped whole by the apply goroutine.
	splitVerdicts atomic.Pointer[splitVerdicts]
	// first holds type → name → version of the first applied snapshot;
	// written once before the gate opens, nil once it is ACKed.
	first   map[string]map[string]string
	flipsMu sync.Mutex
	flips   map[string]flip

	firstAck     chan struct{}
	firstAckOnce sync.Once

	// beforeUpdate, set by tests only, is called with each change just
	// before it goes to its cache (from where streams send it at once).
	beforeUpdate atomic.Pointer[func(typeURL string, c *change)]

	lim        Limits
	limMetrics *limitMetrics
	excluded   excludedLog
	onExcluded func(node, reason string)

	// demand, with translate.Config.OnDemandHosts, serves virtual hosts
	// on demand (ondemand.go); nil otherwise.
	demand *demandState
}

// appliedRevision is what the caches hold for one revision.
type appliedRevision struct {
	generation uint64
	// typeURL, cla and claVersion name the resource that confirms the
	// revision's routing: its ClusterLoadAssignment, or for an idle
	// revision the virtual host (or route configuration) leading it to
	// the hold cluster (memo.ConfirmRef).
	typeURL    string
	cla        string
	claVersion string
}

// flip is a ClusterLoadAssignment change waiting for the last ACK.
type flip struct {
	typeURL string
	version string
	start   time.Time
	// removal: the flip is the removal of the named resource (a revision
	// back at zero on the module's cluster routes, startSleepFlips),
	// done when no stream holds it any more.
	removal bool
	// ahead: the assignment of a cluster added before the revision's
	// first backend (translate.ClusterAhead), timed apart from flips
	// (thaw_xds_wake_cluster_to_ack_seconds).
	ahead bool
}

// NewServer returns a Server with empty caches. Register it on a gRPC
// server, then call Run; streams are held unanswered until Run has applied
// the first Synced snapshot.
func NewServer(opts ServerOptions) *Server {
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	s := &Server{
		log:      opts.Logger,
		cfg:      opts.Config,
		clock:    opts.Clock,
		metrics:  newMetrics(opts.Registerer),
		caches:   map[string]*cachev3.LinearCache{},
		deltas:   map[string]*cache.Delta{},
		tracker:  ack.NewTracker(),
		notify:   newNotifier(),
		applied:  map[string]map[string]types.Resource{},
		versions: map[string]map[string]string{},
		revs:     map[revision.Key]appliedRevision{},
		splits:   map[revision.Key]*pendingSplit{},
		skipped:  map[revision.Key]error{},
		flips:    map[string]flip{},
		firstAck: make(chan struct{}),

		lim:        opts.Limits.withDefaults(),
		limMetrics: newLimitMetrics(opts.Registerer),
		onExcluded: opts.OnExcluded,
	}
	mux := &cachev3.MuxCache{
		Classify:      func(r *cachev3.Request) string { return r.GetTypeUrl() },
		ClassifyDelta: func(r *cachev3.DeltaRequest) string { return r.GetTypeUrl() },
		Caches:        map[string]cachev3.Cache{},
	}
	for _, typ := range resourceTypes {
		if deltaTypes[typ] {
			c := cache.NewDelta(typ, cache.ChangeLogSize)
			s.deltas[typ] = c
			mux.Caches[typ] = c
		} else {
			c := cachev3.NewLinearCache(typ)
			s.caches[typ] = c
			mux.Caches[typ] = c
			s.applied[typ] = map[string]types.Resource{}
			s.versions[typ] = map[string]string{}
		}
	}
	s.newDemand(opts.Registerer)
	s.gate = cache.NewGate(mux)
	// The context only ends the go-control-plane streams when Run returns.
	ctx, cancel := context.WithCancel(context.Background())
	s.stop = cancel
	s.xds = serverv3.NewServer(ctx, s.gate, &callbacks{s: s})
	return s
}

// Register adds the ADS service (delta and state of the world) and the
// EndpointDiscoveryService to g. The latter serves Envoys whose EDS
// clusters name thaw as a non-ADS config source (api_config_source with
// the static cluster thaw_xds, as thaw's Envoy Gateway extension writes
// them): one stream per cluster, answered from the same endpoint cache.Delta,
// tracked per stream like ADS, so ConfirmedEverywhere covers them.
func (s *Server) Register(g *grpc.Server) {
	discoveryv3.RegisterAggregatedDiscoveryServiceServer(g, s.xds)
	endpointservice.RegisterEndpointDiscoveryServiceServer(g, s.xds)
}

// Run follows reg until ctx ends: it waits for the first Synced snapshot,
// applies it, opens the caches to Envoy, then applies every later
// snapshot. It returns nil when ctx ends (open streams are then closed),
// an error wrapping ErrInvalidConfig for a bad translate.Config, or ErrAlreadyRunning.
// Translation problems of single revisions are logged and reported by
// Status; they never stop Run.
func (s *Server) Run(ctx context.Context, reg *revision.Registry) error {
	if err := s.cfg.Validate(); err != nil {
		return err
	}
	if !s.running.CompareAndSwap(false, true) {
		return ErrAlreadyRunning
	}
	defer s.stop()
	// The delta caches keep the encodings; see encoded.Resource.
	tr, err := memo.New(&s.cfg, true)
	if err != nil {
		return err
	}
	s.tr = tr
	stallCtx, stopStallCheck := context.WithCancel(ctx)
	defer stopStallCheck()
	go s.runStallCheck(stallCtx)
	go s.runDemandSweep(stallCtx)
	var last uint64
	opened := false
	for {
		ch := reg.Changed()
		// The ACK and module notifications are taken before the stage and
		// the splits are checked and before apply sends anything: an ACK
		// that lands after a check (on a busy machine, often before Run
		// reaches its select) closes these channels rather than a later
		// one, so a met stage never waits for StageTimeout.
		acksCh, modulesCh := s.notify.wait(), s.modulesChanged()
		snap := reg.Snapshot()
		if err := s.advanceSplits(); err != nil {
			return err
		}
		if err := s.advanceStage(ctx); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		if snap.Synced && (!opened || snap.Version != last) {
			var err error
			applied := true
			if s.stage == nil {
				err = s.apply(ctx, snap, !opened)
			} else {
				// A full apply is staged: endpoint-only changes go out at
				// once; anything else waits for the stage to end.
				applied, err = s.applyWhileStaged(snap)
			}
			if err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return err
			}
			if applied {
				last = snap.Version
				s.observeDemand(snap)
			}
			if !opened {
				opened = true
				if err := s.gate.Open(); err != nil {
					s.log.Error("releasing held xDS watches", zap.Error(err))
				}
				s.log.Info("xDS caches open", zap.Uint64("snapshot", snap.Version),
					zap.Int("revisions", snap.Revisions.Len()))
			}
		}
		if h := s.beforeWait.Load(); h != nil {
			(*h)()
		}
		acks, deadline, stop := s.stageWake(acksCh)
		splitAcks, splitModules, splitDeadline, stopSplit := s.splitWake(acksCh, modulesCh)
		select {
		case <-ctx.Done():
			stop()
			stopSplit()
			return nil
		case <-ch:
		case <-acks:
		case <-deadline:
		case <-splitAcks:
		case <-splitModules:
		case <-splitDeadline:
		}
		stop()
		stopSplit()
	}
}

// ConfirmedEverywhere reports whether every connected Envoy has ACKed the
// ClusterLoadAssignment the server built from the revision at a Generation
// >= generation, with no newer one in flight. It is false when no Envoy is
// connected (scale to zero must not proceed blind), when the server has
// not applied that generation yet, or when the revision is unknown or was
// skipped. Cheap: safe to call per revision on every autoscaler tick.
func (s *Server) ConfirmedEverywhere(key revision.Key, generation uint64) bool {
	s.mu.RLock()
	ar, ok := s.revs[key]
	s.mu.RUnlock()
	if !ok || ar.generation < generation {
		return false
	}
	return s.confirmedOnDemand(ar.typeURL, ar.cla) || s.tracker.AckedEverywhere(ar.typeURL, ar.cla, s.confirmVersion(ar))
}

// WaitConfirmed blocks until ConfirmedEverywhere(key, generation) holds and
// returns nil, or returns ctx.Err().
func (s *Server) WaitConfirmed(ctx context.Context, key revision.Key, generation uint64) error {
	for {
		ch := s.notify.wait()
		if s.ConfirmedEverywhere(key, generation) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ch:
		}
	}
}

// WaitFirstAck blocks until some connected Envoy has ACKed every resource
// of the first applied snapshot (any version of each, resources deleted
// since excepted) and returns nil, or returns ctx.Err(). `thaw local`
// waits on it before declaring the data plane ready.
func (s *Server) WaitFirstAck(ctx context.Context) error {
	select {
	case <-s.firstAck:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
