package xds

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

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
}

// translation is the translator's output: Resources, and for a
// translator that encodes (translator.encode) every resource of the types
// it keeps as encodings, by type URL and resource name; those types'
// lists in Resources are then empty.
type translation struct {
	*Resources
	encoded map[string]map[string]*encodedResource
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
// cluster and one
// ClusterLoadAssignment per revision (serve mode: its ready backends; proxy
// mode, or serve mode without a ready backend: the thaw_activator internal
// listener, so requests are held rather than failed, with the ready
// backends behind it at priority 1 for when thaw is unreachable), the
// internal listener
// thaw_activator and cluster thaw_activator_dst. It does no I/O.
//
// An invalid cfg returns (nil, error wrapping ErrInvalidConfig). A revision
// that cannot be translated (host collision, see HostCollisionError;
// invalid traffic split, see SplitError; planRoutes has the rules) is
// left out: Translate still returns the resources of all other revisions,
// plus an error joining one error per problem; Resources.Skipped lists the
// skipped revisions.
func Translate(snap *revision.Snapshot, cfg Config) (*Resources, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	t, err := newTranslator(&cfg)
	if err != nil {
		return nil, err
	}
	tr, err := t.translate(snap)
	if tr == nil {
		return nil, err
	}
	return tr.Resources, err
}

// translator holds the pieces shared by every revision of one
// translation. The server keeps one across snapshots: it reuses the
// resources of revisions whose routing inputs (hosts, port, mode, backends)
// did not change, and the route configuration when no virtual host
// changed, so a mode flip at 10,000 revisions rebuilds one
// ClusterLoadAssignment, and unchanged resources keep their pointers (the
// server's diff then skips them without proto.Equal).
type translator struct {
	cfg    *Config
	parts  *parts
	shared sharedResources
	memo   map[revision.Key]*memoEntry
	// splitMemo holds the split hosts' virtual hosts by their inputs'
	// signature (see splitVirtualHost).
	splitMemo map[string]*routev3.VirtualHost
	// prevVhosts and prevRoute are the last route configuration and the
	// virtual hosts it was built from (Config.InlineRoutes).
	prevVhosts []*routev3.VirtualHost
	prevRoute  *routev3.RouteConfiguration
	// encode, set by the server before the first translation, keeps the
	// revisions' clusters and (with VHDS) virtual hosts as encodings
	// only (encodedResource), and returns them in translation.encoded.
	encode bool
	// activatorDstEnc is the encoding of shared.activatorDst (encode).
	activatorDstEnc *encodedResource
}

// sharedResources are the resources that depend only on Config.
type sharedResources struct {
	httpListener, activatorListener *listenerv3.Listener
	activatorDst                    *clusterv3.Cluster
	// vhdsRoute is thaw_http without Config.InlineRoutes.
	vhdsRoute *routev3.RouteConfiguration
}

// memoEntry is one revision's last translation and its inputs.
type memoEntry struct {
	// name is the revision's cluster name (revision.ClusterName, which
	// validates the key: worth computing once).
	name     string
	domains  []string
	port     int32
	mode     revision.Mode
	backends []revision.Backend
	timeouts RouteTimeouts
	protocol revision.Protocol
	res      *revisionResources
}

func newTranslator(cfg *Config) (*translator, error) {
	var err error
	t := &translator{cfg: cfg, parts: newParts(cfg), memo: map[revision.Key]*memoEntry{}}
	if t.shared.httpListener, err = HTTPListener(cfg); err != nil {
		return nil, err
	}
	if t.shared.activatorListener, err = ActivatorListener(cfg); err != nil {
		return nil, err
	}
	if t.shared.activatorDst, err = ActivatorDstCluster(cfg); err != nil {
		return nil, err
	}
	if t.shared.vhdsRoute, err = VHDSRouteConfiguration(); err != nil {
		return nil, err
	}
	return t, nil
}

// revisionResources are the per-revision parts of a translation.
type revisionResources struct {
	vhost   *routev3.VirtualHost
	cluster *clusterv3.Cluster
	cla     *endpointv3.ClusterLoadAssignment
	// vhostEnc and clusterEnc replace vhost and cluster when the
	// translator encodes them (encodesVirtualHosts, encode).
	vhostEnc, clusterEnc *encodedResource
}

// encodesVirtualHosts reports whether revisions' virtual hosts are kept as
// encodings: with VHDS only (inline routes are built from the protos).
func (t *translator) encodesVirtualHosts() bool { return t.encode && !t.cfg.InlineRoutes }

func (t *translator) translate(snap *revision.Snapshot) (*translation, error) {
	revs := snap.Sorted()
	var failed map[revision.Key]error
	var plan *routePlan
	var b *built
	for {
		// A revision whose resources fail to build is left out and the
		// routes planned again: it may have been a member of a split.
		// Each round leaves out at least one more revision.
		plan = planRoutes(revs, failed)
		var fails map[revision.Key]error
		b, fails = t.build(revs, plan)
		if len(fails) == 0 {
			break
		}
		if failed == nil {
			failed = map[revision.Key]error{}
		}
		maps.Copy(failed, fails)
	}
	t.memo, t.splitMemo = b.memo, b.splitMemo
	out := &Resources{Skipped: plan.skipped,
		Endpoints: make([]*endpointv3.ClusterLoadAssignment, 0, len(b.memo))}
	tl := &translation{Resources: out}
	var encClusters map[string]*encodedResource
	if t.encode {
		encClusters = make(map[string]*encodedResource, len(b.memo)+1)
		tl.encoded = map[string]map[string]*encodedResource{resourcev3.ClusterType: encClusters}
	} else {
		out.Clusters = make([]*clusterv3.Cluster, 0, len(b.memo)+1)
	}
	var errs []error
	reported := map[error]bool{}
	for _, rev := range revs {
		if err := plan.skipped[rev.Key]; err != nil {
			if !reported[err] { // the members of a split share one error
				reported[err] = true
				errs = append(errs, err)
			}
			continue
		}
		m := b.memo[rev.Key]
		if t.encode {
			encClusters[m.name] = m.res.clusterEnc
		} else {
			out.Clusters = append(out.Clusters, m.res.cluster)
		}
		out.Endpoints = append(out.Endpoints, m.res.cla)
	}
	if t.cfg.InlineRoutes {
		rc, err := t.routeConfiguration(b.vhosts)
		if err != nil {
			return nil, err
		}
		out.Routes = []*routev3.RouteConfiguration{rc}
	} else {
		out.Routes = []*routev3.RouteConfiguration{t.shared.vhdsRoute}
		out.VirtualHosts = slices.SortedFunc(slices.Values(b.vhosts), func(a, b *routev3.VirtualHost) int {
			return cmp.Compare(a.GetName(), b.GetName())
		})
	}
	if t.encodesVirtualHosts() {
		vhosts, err := encodeVirtualHosts(out.VirtualHosts, b.encVhosts)
		if err != nil {
			return nil, err
		}
		tl.encoded[resourcev3.VirtualHostType], out.VirtualHosts = vhosts, nil
	}
	out.Listeners = []*listenerv3.Listener{t.shared.activatorListener, t.shared.httpListener}
	if t.encode {
		if t.activatorDstEnc == nil {
			e, err := encode(t.shared.activatorDst)
			if err != nil {
				return nil, err
			}
			t.activatorDstEnc = e
		}
		encClusters[t.shared.activatorDst.GetName()] = t.activatorDstEnc
	} else {
		out.Clusters = append(out.Clusters, t.shared.activatorDst)
	}
	slices.SortFunc(out.Clusters, func(a, b *clusterv3.Cluster) int { return cmp.Compare(a.GetName(), b.GetName()) })
	slices.SortFunc(out.Endpoints, func(a, b *endpointv3.ClusterLoadAssignment) int {
		return cmp.Compare(a.GetClusterName(), b.GetClusterName())
	})
	slices.SortFunc(out.Listeners, func(a, b *listenerv3.Listener) int { return cmp.Compare(a.GetName(), b.GetName()) })
	return tl, errors.Join(errs...)
}

// built is the per-revision and per-split part of one translation.
type built struct {
	memo      map[revision.Key]*memoEntry
	splitMemo map[string]*routev3.VirtualHost
	// vhosts are the revisions' own virtual hosts in key order, then the
	// split hosts' in plan order; the revisions' own are in encVhosts
	// instead, by name, when the translator encodes them.
	vhosts    []*routev3.VirtualHost
	encVhosts map[string]*encodedResource
}

// encodeVirtualHosts returns the virtual hosts of enc (kept encoded) and
// of vhosts (split hosts, encoded now: a handful) by name.
func encodeVirtualHosts(vhosts []*routev3.VirtualHost, enc map[string]*encodedResource) (map[string]*encodedResource, error) {
	out := make(map[string]*encodedResource, len(enc)+len(vhosts))
	maps.Copy(out, enc)
	for _, vh := range vhosts {
		e, err := encode(vh)
		if err != nil {
			return nil, err
		}
		out[vh.GetName()] = e
	}
	return out, nil
}

// build makes the resources of every revision plan routes and the
// virtual hosts of its splits. fails names the revisions whose resources
// could not be built (for a split, all its members), and why.
func (t *translator) build(revs []*revision.Revision, plan *routePlan) (*built, map[revision.Key]error) {
	b := &built{memo: make(map[revision.Key]*memoEntry, len(revs)), splitMemo: map[string]*routev3.VirtualHost{},
		vhosts: make([]*routev3.VirtualHost, 0, len(revs)+len(plan.splits))}
	fails := map[revision.Key]error{}
	for i, rev := range revs {
		if plan.skipped[rev.Key] != nil {
			continue
		}
		m, err := t.revision(rev, plan.domains[i])
		if err != nil {
			fails[rev.Key] = fmt.Errorf("revision %s: %w", rev.Key, err)
			continue
		}
		b.memo[rev.Key] = m
		switch {
		case m.res.vhost != nil:
			b.vhosts = append(b.vhosts, m.res.vhost)
		case m.res.vhostEnc != nil:
			if b.encVhosts == nil {
				b.encVhosts = make(map[string]*encodedResource, len(revs))
			}
			b.encVhosts[VirtualHostName(m.name)] = m.res.vhostEnc
		}
	}
	for _, g := range plan.splits {
		vh, sig, err := t.splitVirtualHost(g, b.memo)
		if err != nil {
			for _, m := range g.members {
				fails[m.Key] = fmt.Errorf("split host %q: %w", g.domains[0], err)
			}
			continue
		}
		b.splitMemo[sig] = vh
		b.vhosts = append(b.vhosts, vh)
	}
	return b, fails
}

// splitVirtualHost returns a split group's virtual host, the previous one
// when its inputs (hosts, members, percents, timeouts) are unchanged, and
// the signature it is memoised under.
func (t *translator) splitVirtualHost(g splitGroup, memo map[revision.Key]*memoEntry) (*routev3.VirtualHost, string, error) {
	ts := make([]RouteTimeouts, 0, len(g.members))
	for _, m := range g.members {
		e := memo[m.Key]
		if e == nil {
			return nil, "", fmt.Errorf("member %s has no resources", m.Key)
		}
		ts = append(ts, e.timeouts)
	}
	timeouts := MaxTimeouts(ts)
	sig := fmt.Sprintf("%s|%s|%v", strings.Join(g.domains, ","), membersSignature(g.members), timeouts)
	if vh := t.splitMemo[sig]; vh != nil {
		return vh, sig, nil
	}
	vh := SplitVirtualHost(SplitVirtualHostParams{Domains: g.domains, Members: g.members, Timeouts: timeouts,
		Config: t.cfg, parts: t.parts})
	if err := vh.ValidateAll(); err != nil {
		return nil, "", fmt.Errorf("virtual host: %w", err)
	}
	return vh, sig, nil
}

// routeConfiguration returns the previous route configuration when the
// virtual hosts are the same (pointer for pointer), else a new one.
func (t *translator) routeConfiguration(vhosts []*routev3.VirtualHost) (*routev3.RouteConfiguration, error) {
	if t.prevRoute != nil && slices.Equal(vhosts, t.prevVhosts) {
		return t.prevRoute, nil
	}
	rc, err := HTTPRouteConfiguration(vhosts)
	if err != nil {
		return nil, err
	}
	t.prevVhosts, t.prevRoute = vhosts, rc
	return rc, nil
}

// revision returns one revision's virtual host, cluster and endpoints,
// reusing each of the previous ones whose inputs are unchanged.
func (t *translator) revision(rev *revision.Revision, domains []string) (*memoEntry, error) {
	m := t.memo[rev.Key]
	timeouts := TimeoutsOf(&rev.Spec)
	if m != nil && m.port == rev.Spec.Port && m.mode == rev.Mode && m.timeouts == timeouts &&
		m.protocol == rev.Spec.Protocol && slices.Equal(m.domains, domains) && slices.Equal(m.backends, rev.Backends) {
		return m, nil
	}
	var name string
	if m != nil {
		name = m.name
	} else {
		name = revision.ClusterName(rev.Key)
	}
	res := &revisionResources{}
	switch {
	case len(domains) == 0:
		// No host of its own (every host split: the split virtual hosts
		// route to it; or no host at all): cluster and endpoints only.
	case m != nil && slices.Equal(m.domains, domains) && m.timeouts == timeouts:
		res.vhost, res.vhostEnc = m.res.vhost, m.res.vhostEnc
	default:
		vh := RevisionVirtualHost(VirtualHostParams{Key: rev.Key, Domains: domains, Config: t.cfg, parts: t.parts, name: name, Timeouts: timeouts})
		if err := vh.ValidateAll(); err != nil {
			return nil, fmt.Errorf("virtual host: %w", err)
		}
		if !t.encodesVirtualHosts() {
			res.vhost = vh
		} else {
			e, err := encode(vh)
			if err != nil {
				return nil, fmt.Errorf("virtual host: %w", err)
			}
			res.vhostEnc = e
		}
	}
	if m != nil && m.protocol == rev.Spec.Protocol {
		// depends only on the name, protocol and Config
		res.cluster, res.clusterEnc = m.res.cluster, m.res.clusterEnc
	} else {
		c, err := RevisionCluster(RevisionClusterParams{Name: name, Protocol: rev.Spec.Protocol, Config: t.cfg, parts: t.parts})
		if err != nil {
			return nil, err
		}
		if !t.encode {
			res.cluster = c
		} else if res.clusterEnc, err = encode(c); err != nil {
			return nil, err
		}
	}
	cla, err := t.loadAssignment(rev, name)
	if err != nil {
		return nil, err
	}
	res.cla = cla
	return &memoEntry{name: name, domains: domains, port: rev.Spec.Port, mode: rev.Mode, backends: rev.Backends,
		timeouts: timeouts, protocol: rev.Spec.Protocol, res: res}, nil
}

// endpointChanges is the fast path for the common update: the same
// revisions with the same routing (sameRouting: hosts, traffic percent,
// tag, timeouts, protocol), only modes, backends or settings that do not
// reach Envoy changed (a mode flip, a pod becoming ready). It returns the
// revisions whose pointer changed, with their memo entries updated; ok is
// false when the change needs a full translation (revisions added or
// removed, routing changed, a revision skipped before).
func (t *translator) endpointChanges(prev, snap *revision.Snapshot, skipped map[revision.Key]error) (changed []*revision.Revision, ok bool, err error) {
	if prev == nil {
		return nil, false, nil
	}
	// Only the keys the registry changed since prev are visited.
	for k := range snap.Changes(prev) {
		p, r := prev.Get(k), snap.Get(k)
		if p == r { // unchanged, or invalid before and after (not routed)
			continue
		}
		if p == nil || r == nil { // added, removed, or moved in or out of Invalid
			return nil, false, nil
		}
		if _, bad := skipped[k]; bad || t.memo[k] == nil || !sameRouting(&p.Spec, &r.Spec) {
			return nil, false, nil
		}
		changed = append(changed, r)
	}
	for _, r := range changed {
		m, err := t.revision(r, t.memo[r.Key].domains)
		if err != nil {
			return nil, false, fmt.Errorf("revision %s: %w", r.Key, err)
		}
		t.memo[r.Key] = m
	}
	return changed, true, nil
}

// sameRouting reports whether two specs of one revision give the same
// routes and cluster: only then can a change skip the full translation
// (the fast path sends nothing but ClusterLoadAssignments).
func sameRouting(a, b *revision.Spec) bool {
	return slices.Equal(a.Hosts, b.Hosts) && a.Tag == b.Tag && equalPercent(a.TrafficPercent, b.TrafficPercent) &&
		TimeoutsOf(a) == TimeoutsOf(b) && a.Protocol == b.Protocol
}

func equalPercent(a, b *int32) bool {
	return (a == nil && b == nil) || (a != nil && b != nil && *a == *b)
}

func (t *translator) loadAssignment(rev *revision.Revision, name string) (*endpointv3.ClusterLoadAssignment, error) {
	if t.cfg.Module != nil {
		return moduleLoadAssignment(rev, name)
	}
	if rev.Mode == revision.ModeServe && revision.ReadyCount(rev.Backends) > 0 {
		return ServeLoadAssignment(name, rev.Backends, rev.Spec.Port)
	}
	return proxyLoadAssignment(name, t.parts.proxyEndpoints[0], rev.Backends, rev.Spec.Port)
}
