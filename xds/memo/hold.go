package memo

import (
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"

	"github.com/thaw-dev/thaw/revision"
	"github.com/thaw-dev/thaw/xds/encoded"
	"github.com/thaw-dev/thaw/xds/translate"
)

// ConfirmRef names the resource whose ACK by every Envoy confirms an idle
// revision's routing (translate/hold.go): the virtual host that leads it
// to the hold cluster (its own, else that of its first split host), else,
// for a revision without routes of its own or with inline routes, route
// configuration thaw_http. A revision with a cluster is confirmed by its
// ClusterLoadAssignment instead.
type ConfirmRef struct {
	TypeURL, Name, Version string
}

// Confirm returns the ConfirmRef of key when it is idle in the last
// translation; ok is false when it has a cluster (or is unknown).
func (t *Translator) Confirm(key revision.Key) (ref ConfirmRef, ok bool) {
	m := t.memo[key]
	if m == nil || !m.idle() {
		return ConfirmRef{}, false
	}
	return t.confirm[key], true
}

// idleConfirmRefs returns the ConfirmRef of every idle revision of tl;
// plan gives the split hosts.
func idleConfirmRefs(tl *Translation, memo map[revision.Key]*memoEntry, plan *translate.RoutePlan) (map[revision.Key]ConfirmRef, error) {
	var splitOf map[revision.Key]string
	out := map[revision.Key]ConfirmRef{}
	var routeRef *ConfirmRef
	var hashes map[string]string // virtual host name -> version (not encoded)
	for k, m := range memo {
		if !m.idle() {
			continue
		}
		name := translate.VirtualHostName(m.name)
		if len(m.domains) == 0 {
			if splitOf == nil {
				splitOf = map[revision.Key]string{}
				for _, g := range plan.Splits {
					for _, mem := range g.Members {
						if _, ok := splitOf[mem.Key]; !ok {
							splitOf[mem.Key] = translate.SplitVirtualHostName(g.Domains)
						}
					}
				}
			}
			name = splitOf[k]
		}
		if e := tl.Encoded[resourcev3.VirtualHostType][name]; e != nil && name != "" {
			out[k] = ConfirmRef{TypeURL: resourcev3.VirtualHostType, Name: name, Version: e.Version}
			continue
		}
		if name != "" && len(tl.VirtualHosts) > 0 {
			if hashes == nil {
				hashes = make(map[string]string, len(tl.VirtualHosts))
				for _, vh := range tl.VirtualHosts {
					_, v, err := encoded.Hash(vh)
					if err != nil {
						return nil, err
					}
					hashes[vh.GetName()] = v
				}
			}
			if v, ok := hashes[name]; ok {
				out[k] = ConfirmRef{TypeURL: resourcev3.VirtualHostType, Name: name, Version: v}
				continue
			}
		}
		if routeRef == nil {
			rc := tl.Routes[0]
			_, v, err := encoded.Hash(rc)
			if err != nil {
				return nil, err
			}
			routeRef = &ConfirmRef{TypeURL: resourcev3.RouteType, Name: rc.GetName(), Version: v}
		}
		out[k] = *routeRef
	}
	return out, nil
}

// fastTransition reports whether rev, waking or going idle, can take the
// fast path (EndpointChanges): its virtual host is its own VHDS resource,
// so the transition changes that virtual host, its cluster and its
// endpoints and nothing else. A member of a traffic split (its split
// host's virtual host names it) or a translator with inline routes (one
// route configuration for everything) needs a full Translation.
func (t *Translator) fastTransition(rev *revision.Revision) bool {
	m := t.memo[rev.Key]
	return !t.cfg.InlineRoutes && rev.Spec.TrafficPercent == nil && m != nil && len(m.domains) > 0
}

// Transition is what changes in Envoy when a revision wakes or goes idle
// through the fast path: its own virtual host, and its cluster and
// ClusterLoadAssignment (nil when it went idle: remove them). Each of the
// virtual host and cluster is a message, or its encoding when the
// translator encodes them.
type Transition struct {
	Idle bool
	// ClusterName is the revision's cluster and assignment name.
	ClusterName string
	// VirtualHostName is its virtual host's resource name.
	VirtualHostName string
	VirtualHost     *routev3.VirtualHost
	VirtualHostEnc  *encoded.Resource
	Cluster         *clusterv3.Cluster
	ClusterEnc      *encoded.Resource
	Endpoints       *endpointv3.ClusterLoadAssignment
	// KeepsRoutes: the virtual host is the same idle or not
	// (translate.ClusterRoutes): only the cluster and the assignment
	// change.
	KeepsRoutes bool
}

// Transition returns key's resources as the fast path left them (see
// Transition), and records an idle revision's ConfirmRef (its own virtual
// host). ok is false for an unknown revision.
func (t *Translator) Transition(key revision.Key) (tr Transition, ok bool, err error) {
	m := t.memo[key]
	if m == nil {
		return Transition{}, false, nil
	}
	tr = Transition{Idle: m.idle(), ClusterName: m.name, VirtualHostName: translate.VirtualHostName(m.name),
		VirtualHost: m.res.vhost, VirtualHostEnc: m.res.vhostEnc, Cluster: m.res.cluster, ClusterEnc: m.res.clusterEnc,
		Endpoints: m.res.cla, KeepsRoutes: translate.ClusterRoutes(t.cfg)}
	if !tr.Idle {
		delete(t.confirm, key)
		return tr, true, nil
	}
	ref := ConfirmRef{TypeURL: resourcev3.VirtualHostType, Name: tr.VirtualHostName}
	if m.res.vhostEnc != nil {
		ref.Version = m.res.vhostEnc.Version
	} else if _, ref.Version, err = encoded.Hash(m.res.vhost); err != nil {
		return Transition{}, false, err
	}
	if t.confirm == nil {
		t.confirm = map[revision.Key]ConfirmRef{}
	}
	t.confirm[key] = ref
	return tr, true, nil
}
