package memo

import (
	"cmp"
	"fmt"
	"maps"
	"slices"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"

	"github.com/thaw-dev/thaw/revision"
	"github.com/thaw-dev/thaw/xds/encoded"
	"github.com/thaw-dev/thaw/xds/translate"
)

// Translation is a Translator's output: Resources, and for a
// translator that encodes (New's encode) every resource of the types
// it keeps as encodings, by type URL and resource name; those types'
// lists in Resources are then empty.
type Translation struct {
	*translate.Resources
	Encoded map[string]map[string]*encoded.Resource
}

// Translator is the memoised, incremental form of translate.Translate: it
// gives the same resources (TestMemoMatchesTranslate), and holds the
// pieces shared by every revision of one translation. The server keeps
// one across snapshots: it reuses the
// resources of revisions whose routing inputs (hosts, port, mode, backends)
// did not change, and the route configuration when no virtual host
// changed, so a mode flip at 10,000 revisions rebuilds one
// ClusterLoadAssignment, and unchanged resources keep their pointers (the
// server's diff then skips them without proto.Equal).
type Translator struct {
	cfg    *translate.Config
	parts  *translate.Parts
	shared *translate.Shared
	memo   map[revision.Key]*memoEntry
	// splitMemo holds the split hosts' virtual hosts by their inputs'
	// signature (see splitVirtualHost).
	splitMemo map[string]*routev3.VirtualHost
	// prevVhosts and prevRoute are the last route configuration and the
	// virtual hosts it was built from (Config.InlineRoutes).
	prevVhosts []*routev3.VirtualHost
	prevRoute  *routev3.RouteConfiguration
	// encode keeps the revisions' clusters and (with VHDS) virtual hosts
	// as encodings only (encoded.Resource), and returns them in
	// Translation.Encoded.
	encode bool
	// activatorDstEnc is the encoding of shared.ActivatorDst (encode).
	activatorDstEnc *encoded.Resource
	// holdEnc are the encodings of shared.Hold (encode).
	holdEnc []*encoded.Resource
	// confirm holds the ConfirmRef of every idle revision of the last
	// full Translation and those the fast path changed since (hold.go).
	confirm map[revision.Key]ConfirmRef
	// inSplit holds the members of the last full Translation's splits
	// (fastTransition).
	inSplit map[revision.Key]bool
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
	timeouts translate.RouteTimeouts
	protocol revision.Protocol
	// wake: the revision's wake policy reads requests (its proxy-mode endpoint is
	// thaw_activator_wake, translate.LoadAssignment).
	wake bool
	// target is the cluster its routes lead to: name, or a hold cluster
	// while the revision is idle (translate.IdleRevision: then res has no
	// cluster and no cla).
	target string
	// noCluster: the revision is idle (translate.IdleRevision): no
	// cluster and no cla in res; its routes lead to target, a hold
	// cluster, or its own name through the module's header
	// (translate.ClusterRoutes).
	noCluster bool
	res       *revisionResources
}

// idle reports whether the revision has no cluster of its own.
func (m *memoEntry) idle() bool { return m.noCluster }

// New returns a Translator for cfg (validated by the caller; see
// translate.Config.Validate) with an empty memo. With encode, it keeps the
// revisions' clusters and (with VHDS) virtual hosts as encodings only,
// and returns them in Translation.Encoded (the server's delta caches keep
// the encodings; see encoded.Resource). It returns the error of a shared
// resource's builder.
func New(cfg *translate.Config, encode bool) (*Translator, error) {
	shared, err := translate.NewShared(cfg)
	if err != nil {
		return nil, err
	}
	return &Translator{cfg: cfg, parts: translate.NewParts(cfg), shared: shared, encode: encode,
		memo: map[revision.Key]*memoEntry{}}, nil
}

// revisionResources are the per-revision parts of a translation.
type revisionResources struct {
	vhost   *routev3.VirtualHost
	cluster *clusterv3.Cluster
	cla     *endpointv3.ClusterLoadAssignment
	// vhostEnc and clusterEnc replace vhost and cluster when the
	// translator encodes them (encodesVirtualHosts, encode).
	vhostEnc, clusterEnc *encoded.Resource
}

// encodesVirtualHosts reports whether revisions' virtual hosts are kept as
// encodings: with VHDS only (inline routes are built from the protos).
func (t *Translator) encodesVirtualHosts() bool { return t.encode && !t.cfg.InlineRoutes }

func (t *Translator) Translate(snap *revision.Snapshot) (*Translation, error) {
	revs := snap.Sorted()
	var failed map[revision.Key]error
	var plan *translate.RoutePlan
	var b *built
	for {
		// A revision whose resources fail to build is left out and the
		// routes planned again: it may have been a member of a split.
		// Each round leaves out at least one more revision.
		plan = translate.PlanFleetRoutes(revs, snap.SortedSplits(), failed)
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
	t.memo, t.splitMemo, t.inSplit = b.memo, b.splitMemo, b.inSplit
	out := &translate.Resources{Skipped: plan.Skipped, SkippedSplits: plan.SkippedSplits,
		Endpoints: make([]*endpointv3.ClusterLoadAssignment, 0, len(b.memo))}
	tl := &Translation{Resources: out}
	var encClusters map[string]*encoded.Resource
	if t.encode {
		encClusters = make(map[string]*encoded.Resource, len(b.memo)+1)
		tl.Encoded = map[string]map[string]*encoded.Resource{resourcev3.ClusterType: encClusters}
	} else {
		out.Clusters = make([]*clusterv3.Cluster, 0, len(b.memo)+1)
	}
	for _, rev := range revs {
		if plan.Skipped[rev.Key] != nil {
			continue // reported by plan.SkippedErr
		}
		m := b.memo[rev.Key]
		if m.idle() {
			continue // routed to the hold cluster: no cluster, no endpoints
		}
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
		out.Routes = []*routev3.RouteConfiguration{t.shared.VHDSRoute}
		out.VirtualHosts = slices.SortedFunc(slices.Values(b.vhosts), func(a, b *routev3.VirtualHost) int {
			return cmp.Compare(a.GetName(), b.GetName())
		})
	}
	if t.encodesVirtualHosts() {
		vhosts, err := encodeVirtualHosts(out.VirtualHosts, b.encVhosts)
		if err != nil {
			return nil, err
		}
		tl.Encoded[resourcev3.VirtualHostType], out.VirtualHosts = vhosts, nil
	}
	out.Listeners = []*listenerv3.Listener{t.shared.ActivatorListener, t.shared.HTTPListener}
	if t.shared.WakeListener != nil {
		out.Listeners = append(out.Listeners, t.shared.WakeListener)
	}
	if t.shared.HoldListener != nil {
		out.Listeners = append(out.Listeners, t.shared.HoldListener)
	}
	if t.encode {
		if err := t.encodeShared(); err != nil {
			return nil, err
		}
		encClusters[t.shared.ActivatorDst.GetName()] = t.activatorDstEnc
		for i, c := range t.shared.Hold {
			encClusters[c.GetName()] = t.holdEnc[i]
		}
	} else {
		out.Clusters = append(out.Clusters, t.shared.ActivatorDst)
		out.Clusters = append(out.Clusters, t.shared.Hold...)
	}
	slices.SortFunc(out.Clusters, func(a, b *clusterv3.Cluster) int { return cmp.Compare(a.GetName(), b.GetName()) })
	slices.SortFunc(out.Endpoints, func(a, b *endpointv3.ClusterLoadAssignment) int {
		return cmp.Compare(a.GetClusterName(), b.GetClusterName())
	})
	slices.SortFunc(out.Listeners, func(a, b *listenerv3.Listener) int { return cmp.Compare(a.GetName(), b.GetName()) })
	confirm, err := t.idleConfirmRefs(tl, b.memo, plan)
	if err != nil {
		return nil, err
	}
	t.confirm = confirm
	return tl, plan.SkippedErr(revs)
}

// encodeShared encodes the shared clusters once (encode).
func (t *Translator) encodeShared() error {
	if t.activatorDstEnc == nil {
		e, err := encoded.Encode(t.shared.ActivatorDst)
		if err != nil {
			return err
		}
		t.activatorDstEnc = e
	}
	if t.holdEnc == nil {
		for _, c := range t.shared.Hold {
			e, err := encoded.Encode(c)
			if err != nil {
				return err
			}
			t.holdEnc = append(t.holdEnc, e)
		}
	}
	return nil
}

// built is the per-revision and per-split part of one Translation.
type built struct {
	memo      map[revision.Key]*memoEntry
	splitMemo map[string]*routev3.VirtualHost
	// vhosts are the revisions' own virtual hosts in key order, then the
	// split hosts' in plan order; the revisions' own are in encVhosts
	// instead, by name, when the translator encodes them.
	vhosts    []*routev3.VirtualHost
	encVhosts map[string]*encoded.Resource
	// inSplit holds the members of plan's splits.
	inSplit map[revision.Key]bool
}

// encodeVirtualHosts returns the virtual hosts of enc (kept encoded) and
// of vhosts (split hosts, encoded now: a handful) by name.
func encodeVirtualHosts(vhosts []*routev3.VirtualHost, enc map[string]*encoded.Resource) (map[string]*encoded.Resource, error) {
	out := make(map[string]*encoded.Resource, len(enc)+len(vhosts))
	maps.Copy(out, enc)
	for _, vh := range vhosts {
		e, err := encoded.Encode(vh)
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
func (t *Translator) build(revs []*revision.Revision, plan *translate.RoutePlan) (*built, map[revision.Key]error) {
	b := &built{memo: make(map[revision.Key]*memoEntry, len(revs)), splitMemo: map[string]*routev3.VirtualHost{},
		vhosts: make([]*routev3.VirtualHost, 0, len(revs)+len(plan.Splits))}
	fails := map[revision.Key]error{}
	for i, rev := range revs {
		if plan.Skipped[rev.Key] != nil {
			continue
		}
		m, err := t.revision(rev, plan.Domains[i])
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
				b.encVhosts = make(map[string]*encoded.Resource, len(revs))
			}
			b.encVhosts[translate.VirtualHostName(m.name)] = m.res.vhostEnc
		}
	}
	for _, g := range plan.Splits {
		for _, m := range g.Members {
			if b.inSplit == nil {
				b.inSplit = map[revision.Key]bool{}
			}
			b.inSplit[m.Key] = true
		}
		vh, sig, err := t.splitVirtualHost(g, b.memo)
		if err != nil {
			for _, m := range g.Members {
				fails[m.Key] = fmt.Errorf("split host %q: %w", g.Domains[0], err)
			}
			continue
		}
		b.splitMemo[sig] = vh
		b.vhosts = append(b.vhosts, vh)
	}
	return b, fails
}
