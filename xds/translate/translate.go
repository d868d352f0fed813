package translate

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"

	"github.com/thaw-dev/thaw/revision"
)

// ErrHostCollision is wrapped by every *HostCollisionError.
var ErrHostCollision = errors.New("host claimed by two revisions")

// HostCollisionError reports a host claimed by two revisions. The revision
// that sorts first (by namespace, then name) keeps the host; the other one
// is left out of the translation entirely, so a newly added revision cannot
// take traffic away from an existing one with a lower key, and Envoy never
// sees duplicate domains (which would make it reject the whole route
// configuration).
type HostCollisionError struct {
	Host    string
	Kept    revision.Key
	Skipped revision.Key
}

// Error names the host and both revisions.
func (e *HostCollisionError) Error() string {
	return fmt.Sprintf("host %q of revision %s is already claimed by revision %s: %s skipped", e.Host, e.Skipped, e.Kept, e.Skipped)
}

// Unwrap makes errors.Is(err, ErrHostCollision) true.
func (e *HostCollisionError) Unwrap() error { return ErrHostCollision }

// Resources is one complete, deterministic set of Envoy resources. Every
// list is sorted by resource name; every message passed ValidateAll.
// Messages may share sub-messages: treat them as immutable.
type Resources struct {
	Listeners []*listenerv3.Listener
	Routes    []*routev3.RouteConfiguration
	Clusters  []*clusterv3.Cluster
	Endpoints []*endpointv3.ClusterLoadAssignment
	// VirtualHosts are thaw_http's virtual hosts served over VHDS, named
	// VirtualHostName(...); empty with Config.InlineRoutes, where they are
	// inside Routes.
	VirtualHosts []*routev3.VirtualHost
	// Skipped holds the revisions left out of this translation and why
	// (host collisions, invalid traffic splits, resources Envoy would
	// reject). Never nil.
	Skipped map[revision.Key]error
	// SkippedSplits holds the splits of thaw's own fleet that are not
	// routed and why (RoutePlan.SkippedSplits); nil without splits.
	SkippedSplits map[revision.Key]error
}

// ByType returns the resources as go-control-plane maps: type URL →
// resource name → resource.
func (r *Resources) ByType() map[string]map[string]types.Resource {
	out := map[string]map[string]types.Resource{
		resourcev3.ListenerType:    make(map[string]types.Resource, len(r.Listeners)),
		resourcev3.RouteType:       make(map[string]types.Resource, len(r.Routes)),
		resourcev3.ClusterType:     make(map[string]types.Resource, len(r.Clusters)),
		resourcev3.EndpointType:    make(map[string]types.Resource, len(r.Endpoints)),
		resourcev3.VirtualHostType: make(map[string]types.Resource, len(r.VirtualHosts)),
	}
	for _, l := range r.Listeners {
		out[resourcev3.ListenerType][l.GetName()] = l
	}
	for _, rc := range r.Routes {
		out[resourcev3.RouteType][rc.GetName()] = rc
	}
	for _, c := range r.Clusters {
		out[resourcev3.ClusterType][c.GetName()] = c
	}
	for _, e := range r.Endpoints {
		out[resourcev3.EndpointType][e.GetClusterName()] = e
	}
	for _, vh := range r.VirtualHosts {
		out[resourcev3.VirtualHostType][vh.GetName()] = vh
	}
	return out
}

// Translate turns a registry snapshot into Envoy resources: listener
// thaw_http with route configuration thaw_http (a 404 catch-all), its
// virtual hosts over VHDS (one per revision with hosts of its own, one per
// group of hosts that revisions split by percent (SplitVirtualHost);
// inline in the route configuration with Config.InlineRoutes), one EDS
// cluster and one ClusterLoadAssignment per revision with a backend
// (serve mode: its ready backends; proxy mode, or serve mode without a
// ready backend: the thaw_activator internal listener, so requests are
// held rather than failed, with the ready backends behind it at priority
// 1 for when thaw is unreachable), none for an idle revision (no backend:
// its routes lead to the shared hold cluster, hold.go), the internal
// listeners thaw_activator and thaw_hold and clusters thaw_activator_dst,
// thaw_hold and thaw_hold_h2c. It does no I/O.
//
// An invalid cfg returns (nil, error wrapping ErrInvalidConfig). A revision
// that cannot be translated (host collision, see HostCollisionError;
// invalid traffic split, see SplitError; PlanRoutes has the rules) is
// left out: Translate still returns the resources of all other revisions,
// plus an error joining one error per problem; Resources.Skipped lists the
// skipped revisions.
func Translate(snap *revision.Snapshot, cfg Config) (*Resources, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	sh, err := NewShared(&cfg)
	if err != nil {
		return nil, err
	}
	pt := NewParts(&cfg)
	revs := snap.Sorted()
	var failed map[revision.Key]error
	for {
		// A revision whose resources fail to build is left out and the
		// routes planned again: it may have been a member of a split.
		// Each round leaves out at least one more revision.
		plan := PlanFleetRoutes(revs, snap.SortedSplits(), failed)
		b, fails := build(revs, plan, &cfg, pt)
		if len(fails) == 0 {
			return assemble(revs, plan, b, &cfg, sh)
		}
		if failed == nil {
			failed = map[revision.Key]error{}
		}
		maps.Copy(failed, fails)
	}
}

// Shared are the resources that depend only on Config.
type Shared struct {
	HTTPListener, ActivatorListener *listenerv3.Listener
	// WakeListener is thaw_activator_wake, for revisions with a wake
	// policy; nil with Config.Module (the module sees every header).
	WakeListener *listenerv3.Listener
	ActivatorDst *clusterv3.Cluster
	// VHDSRoute is thaw_http without Config.InlineRoutes.
	VHDSRoute *routev3.RouteConfiguration
	// Hold are the hold clusters of idle revisions and HoldListener
	// their internal listener (hold.go); only with Config.IdleHoldPath
	// and without Config.Module.
	Hold         []*clusterv3.Cluster
	HoldListener *listenerv3.Listener
}

// NewShared builds the resources that depend only on cfg; it returns the
// first builder error.
func NewShared(cfg *Config) (*Shared, error) {
	var sh Shared
	var err error
	if sh.HTTPListener, err = HTTPListener(cfg); err != nil {
		return nil, err
	}
	if sh.ActivatorListener, err = ActivatorListener(cfg); err != nil {
		return nil, err
	}
	if cfg.Module == nil {
		if sh.WakeListener, err = WakeListener(cfg); err != nil {
			return nil, err
		}
	}
	if sh.ActivatorDst, err = ActivatorDstCluster(cfg); err != nil {
		return nil, err
	}
	if sh.VHDSRoute, err = vhdsRouteConfiguration(cfg); err != nil {
		return nil, err
	}
	if cfg.IdleHoldPath && cfg.Module == nil {
		if sh.HoldListener, err = HoldListener(cfg); err != nil {
			return nil, err
		}
		for _, p := range []revision.Protocol{revision.ProtocolHTTP1, revision.ProtocolH2C} {
			c, err := HoldCluster(cfg, p)
			if err != nil {
				return nil, err
			}
			sh.Hold = append(sh.Hold, c)
		}
	}
	return &sh, nil
}

// revisionResources are one revision's resources in a translation.
type revisionResources struct {
	vhost *routev3.VirtualHost // nil when the revision has no host of its own
	// cluster and cla are nil while the revision is idle (IdleRevision).
	cluster  *clusterv3.Cluster
	cla      *endpointv3.ClusterLoadAssignment
	timeouts RouteTimeouts
	// target is the cluster its routes lead to: its own, or a hold
	// cluster while it is idle.
	target string
}

// built is the per-revision and per-split part of one translation.
type built struct {
	revs map[revision.Key]*revisionResources
	// vhosts are the revisions' own virtual hosts in key order, then the
	// split hosts' in plan order.
	vhosts []*routev3.VirtualHost
}

// build makes the resources of every revision plan routes and the
// virtual hosts of its splits. fails names the revisions whose resources
// could not be built (for a split, all its members), and why.
func build(revs []*revision.Revision, plan *RoutePlan, cfg *Config, pt *Parts) (*built, map[revision.Key]error) {
	b := &built{revs: make(map[revision.Key]*revisionResources, len(revs)),
		vhosts: make([]*routev3.VirtualHost, 0, len(revs)+len(plan.Splits))}
	fails := map[revision.Key]error{}
	for i, rev := range revs {
		if plan.Skipped[rev.Key] != nil {
			continue
		}
		r, err := buildRevision(rev, plan.Domains[i], cfg, pt)
		if err != nil {
			fails[rev.Key] = fmt.Errorf("revision %s: %w", rev.Key, err)
			continue
		}
		b.revs[rev.Key] = r
		if r.vhost != nil {
			b.vhosts = append(b.vhosts, r.vhost)
		}
	}
	for _, g := range plan.Splits {
		vh, err := buildSplit(g, b.revs, cfg, pt)
		if err != nil {
			for _, m := range g.Members {
				fails[m.Key] = fmt.Errorf("split host %q: %w", g.Domains[0], err)
			}
			continue
		}
		b.vhosts = append(b.vhosts, vh)
	}
	return b, fails
}

// buildRevision returns one revision's virtual host (none without
// domains of its own), cluster and endpoints.
func buildRevision(rev *revision.Revision, domains []string, cfg *Config, pt *Parts) (*revisionResources, error) {
	name := revision.ClusterName(rev.Key)
	r := &revisionResources{timeouts: TimeoutsOf(&rev.Spec), target: name}
	idle := IdleRevision(cfg, rev)
	r.target = RouteTarget(cfg, rev, name)
	if len(domains) > 0 {
		vh := RevisionVirtualHost(VirtualHostParams{Key: rev.Key, Domains: domains, Config: cfg, Parts: pt, Name: name,
			Cluster: r.target, Timeouts: r.timeouts})
		if err := vh.ValidateAll(); err != nil {
			return nil, fmt.Errorf("virtual host: %w", err)
		}
		r.vhost = vh
	}
	if idle {
		return r, nil // no cluster, no endpoints: routed to the hold cluster
	}
	c, err := RevisionCluster(RevisionClusterParams{Name: name, Protocol: rev.Spec.Protocol, Config: cfg, Parts: pt})
	if err != nil {
		return nil, err
	}
	r.cluster = c
	if r.cla, err = LoadAssignment(cfg, pt, rev, name); err != nil {
		return nil, err
	}
	return r, nil
}

// buildSplit returns a split group's virtual host, with the longest of its
// members' timeouts (MaxTimeouts).
func buildSplit(g SplitGroup, revs map[revision.Key]*revisionResources, cfg *Config, pt *Parts) (*routev3.VirtualHost, error) {
	ts := make([]RouteTimeouts, 0, len(g.Members))
	targets := make([]string, 0, len(g.Members))
	for _, m := range g.Members {
		r := revs[m.Key]
		if r == nil {
			return nil, fmt.Errorf("member %s has no resources", m.Key)
		}
		ts = append(ts, r.timeouts)
		targets = append(targets, r.target)
	}
	vh := SplitVirtualHost(SplitVirtualHostParams{Domains: g.Domains, Members: g.Members, Timeouts: MaxTimeouts(ts),
		Clusters: targets, Config: cfg, Parts: pt})
	if err := vh.ValidateAll(); err != nil {
		return nil, fmt.Errorf("virtual host: %w", err)
	}
	return vh, nil
}

// assemble returns the sorted Resources of a built translation and an
// error joining one error per skipped revision (once per split).
func assemble(revs []*revision.Revision, plan *RoutePlan, b *built, cfg *Config, sh *Shared) (*Resources, error) {
	out := &Resources{Skipped: plan.Skipped, SkippedSplits: plan.SkippedSplits,
		Clusters:  make([]*clusterv3.Cluster, 0, len(b.revs)+1),
		Endpoints: make([]*endpointv3.ClusterLoadAssignment, 0, len(b.revs))}
	for _, rev := range revs {
		if plan.Skipped[rev.Key] != nil {
			continue // reported by plan.SkippedErr
		}
		r := b.revs[rev.Key]
		if r.cluster == nil {
			continue // idle: routed to the hold cluster
		}
		out.Clusters = append(out.Clusters, r.cluster)
		out.Endpoints = append(out.Endpoints, r.cla)
	}
	if cfg.InlineRoutes {
		rc, err := HTTPRouteConfiguration(b.vhosts)
		if err != nil {
			return nil, err
		}
		out.Routes = []*routev3.RouteConfiguration{rc}
	} else {
		out.Routes = []*routev3.RouteConfiguration{sh.VHDSRoute}
		out.VirtualHosts = slices.SortedFunc(slices.Values(b.vhosts), func(a, b *routev3.VirtualHost) int {
			return cmp.Compare(a.GetName(), b.GetName())
		})
	}
	out.Listeners = []*listenerv3.Listener{sh.ActivatorListener, sh.HTTPListener}
	if sh.WakeListener != nil {
		out.Listeners = append(out.Listeners, sh.WakeListener)
	}
	if sh.HoldListener != nil {
		out.Listeners = append(out.Listeners, sh.HoldListener)
	}
	out.Clusters = append(out.Clusters, sh.ActivatorDst)
	out.Clusters = append(out.Clusters, sh.Hold...)
	out.Sort()
	return out, plan.SkippedErr(revs)
}

// Sort sorts Clusters, Endpoints and Listeners by name (Routes and
// VirtualHosts are built sorted).
func (r *Resources) Sort() {
	slices.SortFunc(r.Clusters, func(a, b *clusterv3.Cluster) int { return cmp.Compare(a.GetName(), b.GetName()) })
	slices.SortFunc(r.Endpoints, func(a, b *endpointv3.ClusterLoadAssignment) int {
		return cmp.Compare(a.GetClusterName(), b.GetClusterName())
	})
	slices.SortFunc(r.Listeners, func(a, b *listenerv3.Listener) int { return cmp.Compare(a.GetName(), b.GetName()) })
}

// LoadAssignment returns a revision's ClusterLoadAssignment named name:
// the module's (Config.Module), its ready backends in serve mode, else
// the thaw_activator internal listener (thaw_activator_wake for a revision
// whose wake policy reads requests) with the backends behind it.
func LoadAssignment(cfg *Config, pt *Parts, rev *revision.Revision, name string) (*endpointv3.ClusterLoadAssignment, error) {
	if cfg.Module != nil {
		return moduleLoadAssignment(rev, name)
	}
	if rev.Mode == revision.ModeServe && revision.ReadyCount(rev.Backends) > 0 {
		return ServeLoadAssignment(name, rev.Backends, rev.Spec.Port)
	}
	activator := pt.proxyEndpoints[0]
	if rev.Spec.Wake.ReadsRequests() {
		activator = pt.wakeEndpoints[0]
	}
	return proxyLoadAssignment(name, activator, rev.Backends, rev.Spec.Port)
}
