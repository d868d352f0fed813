package xds

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"

	"github.com/thaw-dev/thaw/revision"
)

// ErrHostCollision is wrapped by every *HostCollisionError.
var ErrHostCollision = errors.New("host claimed by two revisions")

// ErrNameCollision reports two revisions whose keys map to the same
// cluster name ("a/b.c" and "a/b_c"); the one that sorts first is kept.
var ErrNameCollision = errors.New("cluster name claimed by two revisions")

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
	// Skipped holds the revisions left out of this translation and why
	// (host collisions, resources Envoy would reject). Never nil.
	Skipped map[revision.Key]error
}

// ByType returns the resources as go-control-plane maps: type URL →
// resource name → resource.
func (r *Resources) ByType() map[string]map[string]types.Resource {
	out := map[string]map[string]types.Resource{
		resourcev3.ListenerType: make(map[string]types.Resource, len(r.Listeners)),
		resourcev3.RouteType:    make(map[string]types.Resource, len(r.Routes)),
		resourcev3.ClusterType:  make(map[string]types.Resource, len(r.Clusters)),
		resourcev3.EndpointType: make(map[string]types.Resource, len(r.Endpoints)),
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
	return out
}

// Translate turns a registry snapshot into Envoy resources: listener
// thaw_http with route configuration thaw_http (one virtual host per
// revision plus a 404 catch-all), one EDS cluster and one
// ClusterLoadAssignment per revision (serve mode: its ready backends; proxy
// mode, or serve mode without a ready backend: the thaw_activator internal
// listener, so requests are held rather than failed), the internal listener
// thaw_activator and cluster thaw_activator_dst. It does no I/O.
//
// An invalid cfg returns (nil, error wrapping ErrInvalidConfig). A revision
// that cannot be translated (host collision, see HostCollisionError) is
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
	return t.translate(snap)
}

// translator holds the pieces shared by every revision of one translation.
type translator struct {
	cfg *Config
	ts  *corev3.TransportSocket
}

func newTranslator(cfg *Config) (*translator, error) {
	ts, err := InternalUpstreamTransportSocket()
	if err != nil {
		return nil, err
	}
	return &translator{cfg: cfg, ts: ts}, nil
}

// revisionResources are the per-revision parts of a translation.
type revisionResources struct {
	vhost   *routev3.VirtualHost
	cluster *clusterv3.Cluster
	cla     *endpointv3.ClusterLoadAssignment
}

func (t *translator) translate(snap *revision.Snapshot) (*Resources, error) {
	revs := snap.Sorted()
	out := &Resources{Skipped: map[revision.Key]error{}}
	var errs []error
	owner := make(map[string]revision.Key, len(revs))
	clusterOwner := make(map[string]revision.Key, len(revs))
	vhosts := make([]*routev3.VirtualHost, 0, len(revs))
	for _, rev := range revs {
		domains, err := claimHosts(owner, rev)
		if k, taken := clusterOwner[ClusterName(rev.Key)]; taken && err == nil {
			err = fmt.Errorf("%w: revisions %s and %s both map to cluster %s: %s skipped",
				ErrNameCollision, k, rev.Key, ClusterName(rev.Key), rev.Key)
		}
		if err != nil {
			out.Skipped[rev.Key] = err
			errs = append(errs, err)
			continue
		}
		rr, err := t.revision(rev, domains)
		if err != nil {
			err = fmt.Errorf("revision %s: %w", rev.Key, err)
			out.Skipped[rev.Key] = err
			errs = append(errs, err)
			continue
		}
		for _, d := range domains {
			owner[d] = rev.Key
		}
		clusterOwner[ClusterName(rev.Key)] = rev.Key
		vhosts = append(vhosts, rr.vhost)
		out.Clusters = append(out.Clusters, rr.cluster)
		out.Endpoints = append(out.Endpoints, rr.cla)
	}
	if err := t.shared(out, vhosts); err != nil {
		return nil, err
	}
	slices.SortFunc(out.Clusters, func(a, b *clusterv3.Cluster) int { return cmp.Compare(a.GetName(), b.GetName()) })
	slices.SortFunc(out.Endpoints, func(a, b *endpointv3.ClusterLoadAssignment) int {
		return cmp.Compare(a.GetClusterName(), b.GetClusterName())
	})
	slices.SortFunc(out.Listeners, func(a, b *listenerv3.Listener) int { return cmp.Compare(a.GetName(), b.GetName()) })
	return out, errors.Join(errs...)
}

// claimHosts returns rev's hosts lowercased, or a joined
// *HostCollisionError for each host another revision already owns.
func claimHosts(owner map[string]revision.Key, rev *revision.Revision) ([]string, error) {
	domains := make([]string, 0, len(rev.Spec.Hosts))
	var errs []error
	for _, h := range rev.Spec.Hosts {
		d := strings.ToLower(h)
		if k, taken := owner[d]; taken {
			errs = append(errs, &HostCollisionError{Host: d, Kept: k, Skipped: rev.Key})
			continue
		}
		domains = append(domains, d)
	}
	if len(domains) == 0 && len(errs) == 0 {
		errs = append(errs, fmt.Errorf("revision %s has no hosts", rev.Key))
	}
	return domains, errors.Join(errs...)
}

// revision builds one revision's virtual host, cluster and endpoints.
func (t *translator) revision(rev *revision.Revision, domains []string) (*revisionResources, error) {
	name := ClusterName(rev.Key)
	vh := RevisionVirtualHost(VirtualHostParams{Key: rev.Key, Domains: domains, Config: t.cfg})
	if err := vh.ValidateAll(); err != nil {
		return nil, fmt.Errorf("virtual host: %w", err)
	}
	c, err := RevisionCluster(RevisionClusterParams{Name: name, TransportSocket: t.ts, Config: t.cfg})
	if err != nil {
		return nil, err
	}
	cla, err := t.loadAssignment(rev, name)
	if err != nil {
		return nil, err
	}
	return &revisionResources{vhost: vh, cluster: c, cla: cla}, nil
}

func (t *translator) loadAssignment(rev *revision.Revision, name string) (*endpointv3.ClusterLoadAssignment, error) {
	if rev.Mode == revision.ModeServe && revision.ReadyCount(rev.Backends) > 0 {
		return ServeLoadAssignment(name, rev.Backends, rev.Spec.Port)
	}
	return ProxyLoadAssignment(name)
}

// shared adds the resources every translation has.
func (t *translator) shared(out *Resources, vhosts []*routev3.VirtualHost) error {
	httpL, err := HTTPListener(t.cfg)
	if err != nil {
		return err
	}
	actL, err := ActivatorListener(t.cfg)
	if err != nil {
		return err
	}
	rc, err := HTTPRouteConfiguration(vhosts)
	if err != nil {
		return err
	}
	dst, err := ActivatorDstCluster(t.cfg)
	if err != nil {
		return err
	}
	out.Listeners = append(out.Listeners, httpL, actL)
	out.Routes = append(out.Routes, rc)
	out.Clusters = append(out.Clusters, dst)
	return nil
}
