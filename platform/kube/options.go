package kube

import (
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/scale"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/thaw-dev/thaw/revision"
)

// DefaultStatusInterval is how often the leader compares and patches the
// thaw.dev/status annotations: at most one patch per workload per interval.
const DefaultStatusInterval = 5 * time.Second

// EventComponent is the source component of thaw's Kubernetes Events.
const EventComponent = "thaw"

// Options configures a Platform. Client, Registry and either RESTConfig or
// Scales are required.
type Options struct {
	Logger *zap.Logger
	// Client reads workloads and pods, patches status annotations and (when
	// Recorder is nil) writes Events.
	Client kubernetes.Interface
	// RESTConfig builds the /scale client with a cached discovery REST
	// mapper. Ignored when Scales is set.
	RESTConfig *rest.Config
	// Scales overrides the /scale client (tests use
	// k8s.io/client-go/scale/fake).
	Scales scale.ScalesGetter
	// Registry receives revisions and backends.
	Registry *revision.Registry
	// Defaults is the Spec every workload's annotations are applied onto
	// (global defaults from flags). Zero value: revision.DefaultSpec().
	Defaults revision.Spec
	// Limits bound every revision's settings beyond their fixed ranges
	// (hold-timeout at most the hold budget). Zero value: none.
	Limits revision.Limits
	// Namespace limits the watch to one namespace; "" watches all.
	Namespace string
	// LabelSelector limits which Deployments and StatefulSets are watched
	// (label selector syntax, "" = all). Pods are not filtered by it: they
	// rarely carry their workload's labels.
	LabelSelector string
	// PodLabelSelector limits which Pods are watched ("" = all in
	// Namespace). Set it when every revision's pods carry a common label, to
	// save memory in large clusters.
	PodLabelSelector string
	// Recorder writes Events. nil: the platform builds one (component
	// "thaw") writing through Client, and shuts it down when Run returns.
	Recorder record.EventRecorder
	// Registerer receives the platform's metrics; nil registers nothing.
	Registerer prometheus.Registerer
	// Clock drives the status loop. Default: the real clock.
	Clock clock.WithTicker
	// StatusInterval: see DefaultStatusInterval. Negative disables the
	// thaw.dev/status annotation.
	StatusInterval time.Duration
	// SplitDiscoveryInterval is how often discovery is asked whether the
	// RevisionSplit CRD is served, while it was not when Run started
	// (default DefaultSplitDiscoveryInterval; negative: never, installing
	// the CRD later needs a restart).
	SplitDiscoveryInterval time.Duration
	// Load, when set, says how busy each pod is: before a scale-down the
	// leader writes each ready pod's requests in flight into its
	// controller.kubernetes.io/pod-deletion-cost annotation, so the
	// ReplicaSet controller removes idle pods first (Deployments only).
	// nil: the controller's own order.
	Load LoadSource
	// MaxDeletionCostPatches bounds the pod patches of one scale-down.
	// Default DefaultMaxDeletionCostPatches.
	MaxDeletionCostPatches int
	// Elected says leadership comes from an Elector: the platform then
	// writes to the cluster (scale patches, Events, status annotations)
	// only between SetLeader(true) and SetLeader(false). When false it
	// always writes, as a single replica does.
	Elected bool

	// Revisions says whether Revision objects (thaw.dev/v1alpha1) are
	// watched; see RevisionsMode. Default RevisionsAuto.
	Revisions RevisionsMode
	// Dynamic reads Revisions and writes their status. nil: built from
	// RESTConfig (and Revisions are off without one).
	Dynamic dynamic.Interface
	// Mapper maps a Revision's scaleTargetRef kind to its resource. nil:
	// a cached discovery mapper built from RESTConfig, or, without one, a
	// static mapper knowing apps/v1 Deployment, StatefulSet and ReplicaSet.
	Mapper meta.RESTMapper
	// Discovery tells RevisionsAuto whether the Revision CRD is served.
	// nil: built from RESTConfig.
	Discovery discovery.DiscoveryInterface
	// ScaleRefresh is how old a Revision's view of its scale target
	// (spec.replicas and the pod selector, read through /scale) may get
	// before it is read again. Deployment and StatefulSet targets are also
	// read again whenever the informer sees them change. Default
	// DefaultScaleRefresh.
	ScaleRefresh time.Duration
}

// RevisionsMode selects whether the platform watches Revision objects.
type RevisionsMode string

// Revision watching modes.
const (
	// RevisionsAuto watches Revisions when the apiserver serves
	// revisions.thaw.dev/v1alpha1 when Run starts (a CRD installed later
	// needs a restart), and annotated workloads in any case.
	RevisionsAuto RevisionsMode = ""
	// RevisionsOn always watches Revisions; Run fails when the CRD is
	// not served.
	RevisionsOn RevisionsMode = "on"
	// RevisionsOff never watches Revisions: annotated workloads only.
	RevisionsOff RevisionsMode = "off"
)

// DefaultScaleRefresh: see Options.ScaleRefresh.
const DefaultScaleRefresh = 30 * time.Second

func (o *Options) setDefaults() error {
	if o.Client == nil || o.Registry == nil {
		return errors.New("kube: Options.Client and Options.Registry are required")
	}
	if o.Scales == nil && o.RESTConfig == nil {
		return errors.New("kube: Options.RESTConfig (or Scales) is required")
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.MaxDeletionCostPatches <= 0 {
		o.MaxDeletionCostPatches = DefaultMaxDeletionCostPatches
	}
	if o.StatusInterval == 0 {
		o.StatusInterval = DefaultStatusInterval
	}
	if o.SplitDiscoveryInterval == 0 {
		o.SplitDiscoveryInterval = DefaultSplitDiscoveryInterval
	}
	if o.ScaleRefresh <= 0 {
		o.ScaleRefresh = DefaultScaleRefresh
	}
	switch o.Revisions {
	case RevisionsAuto, RevisionsOn, RevisionsOff:
	default:
		return fmt.Errorf("kube: Options.Revisions %q: want auto (\"\"), %q or %q", o.Revisions, RevisionsOn, RevisionsOff)
	}
	if err := o.buildClients(); err != nil {
		return err
	}
	if o.Defaults.Metric == "" {
		o.Defaults = revision.DefaultSpec()
	}
	for name, sel := range map[string]string{"LabelSelector": o.LabelSelector, "PodLabelSelector": o.PodLabelSelector} {
		if _, err := labels.Parse(sel); err != nil {
			return fmt.Errorf("kube: Options.%s %q: %w", name, sel, err)
		}
	}
	return nil
}

// buildClients fills Scales, Mapper, Dynamic and Discovery from
// RESTConfig where they are nil, sharing one cached discovery client.
func (o *Options) buildClients() error {
	if o.RESTConfig == nil {
		if o.Mapper == nil {
			o.Mapper = staticMapper()
		}
		return nil
	}
	var cached discovery.CachedDiscoveryInterface
	if o.Discovery == nil || o.Mapper == nil || o.Scales == nil {
		dc, err := discovery.NewDiscoveryClientForConfig(o.RESTConfig)
		if err != nil {
			return fmt.Errorf("kube: discovery client: %w", err)
		}
		cached = memory.NewMemCacheClient(dc)
		if o.Discovery == nil {
			o.Discovery = dc
		}
	}
	if o.Mapper == nil {
		o.Mapper = restmapper.NewDeferredDiscoveryRESTMapper(cached)
	}
	if o.Scales == nil {
		sc, err := scale.NewForConfig(o.RESTConfig, o.Mapper, dynamic.LegacyAPIPathResolverFunc,
			scale.NewDiscoveryScaleKindResolver(cached))
		if err != nil {
			return fmt.Errorf("kube: scale client: %w", err)
		}
		o.Scales = sc
	}
	if o.Dynamic == nil {
		dyn, err := dynamic.NewForConfig(o.RESTConfig)
		if err != nil {
			return fmt.Errorf("kube: dynamic client: %w", err)
		}
		o.Dynamic = dyn
	}
	return nil
}
