package memo

import (
	"fmt"

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
//
// Version is empty for a virtual host encoded lazily (lazyVirtualHost):
// the server takes the version its VHDS cache holds.
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

// idleConfirmRefs returns the ConfirmRef of every revision of tl that
// wants one (wantsConfirmRef: the idle ones, and with the module's
// cluster routes those without a virtual host of their own); plan gives
// the split hosts.
func (t *Translator) idleConfirmRefs(tl *Translation, memo map[revision.Key]*memoEntry, plan *translate.RoutePlan) (map[revision.Key]ConfirmRef, error) {
	var splitOf map[revision.Key]string
	out := map[revision.Key]ConfirmRef{}
	var routeRef *ConfirmRef
	var hashes map[string]string // virtual host name -> version (not encoded)
	for k, m := range memo {
		if !t.wantsConfirmRef(m) {
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
			out[k] = ConfirmRef{TypeURL: resourcev3.VirtualHostType, Name: name, Version: refVersion(e)}
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

// wantsConfirmRef reports whether the full Translation records m's
// ConfirmRef: when it is idle, and, with the module's cluster routes
// (translate.ClusterRoutes), when it has no virtual host of its own (a
// split member whose hosts are all split): its ref is then its split
// host's virtual host, which a wake or a return to zero never changes,
// so Transition finds it when the member goes idle on the fast path.
func (t *Translator) wantsConfirmRef(m *memoEntry) bool {
	return m.idle() || (translate.ClusterRoutes(t.cfg) && len(m.domains) == 0)
}

// fastTransition reports whether rev, waking or going idle, can take the
// fast path (EndpointChanges). With the module's cluster routes
// (translate.ClusterRoutes) every revision can, split members too: no
// route names anything that changes (a split member's weighted cluster
// takes the module's header as its own routes do), so a wake or a return
// to zero is its cluster and assignment only. Otherwise its virtual host
// must be its own VHDS resource, so the transition changes that virtual
// host, its cluster and its endpoints and nothing else: a member of a
// traffic split (its split host's virtual host names its target) or a
// translator with inline routes (one route configuration for everything)
// needs a full Translation.
func (t *Translator) fastTransition(rev *revision.Revision) bool {
	m := t.memo[rev.Key]
	if m == nil || t.cfg.InlineRoutes {
		return false
	}
	if translate.ClusterRoutes(t.cfg) {
		return true
	}
	return rev.Spec.TrafficPercent == nil && len(m.domains) > 0 && !t.inSplit[rev.Key]
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
	if len(m.domains) == 0 {
		// A split member on cluster routes (fastTransition): its
		// ConfirmRef, its split host's virtual host, was recorded by the
		// full Translation (wantsConfirmRef) and no transition changes it.
		if _, ok := t.confirm[key]; !ok {
			return Transition{}, false, fmt.Errorf("revision %s: no confirming resource recorded", key)
		}
		return tr, true, nil
	}
	if !tr.Idle {
		delete(t.confirm, key)
		return tr, true, nil
	}
	ref := ConfirmRef{TypeURL: resourcev3.VirtualHostType, Name: tr.VirtualHostName}
	if m.res.vhostEnc != nil {
		ref.Version = refVersion(m.res.vhostEnc)
	} else if _, ref.Version, err = encoded.Hash(m.res.vhost); err != nil {
		return Transition{}, false, err
	}
	if t.confirm == nil {
		t.confirm = map[revision.Key]ConfirmRef{}
	}
	t.confirm[key] = ref
	return tr, true, nil
}
