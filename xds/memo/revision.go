package memo

import (
	"fmt"
	"slices"
	"strings"

	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"

	"github.com/thaw-dev/thaw/revision"
	"github.com/thaw-dev/thaw/xds/encoded"
	"github.com/thaw-dev/thaw/xds/translate"
)

// splitVirtualHost returns a split group's virtual host, the previous one
// when its inputs (hosts, members, percents, timeouts) are unchanged, and
// the signature it is memoised under.
func (t *Translator) splitVirtualHost(g translate.SplitGroup, memo map[revision.Key]*memoEntry) (*routev3.VirtualHost, string, error) {
	ts := make([]translate.RouteTimeouts, 0, len(g.Members))
	targets := make([]string, 0, len(g.Members))
	for _, m := range g.Members {
		e := memo[m.Key]
		if e == nil {
			return nil, "", fmt.Errorf("member %s has no resources", m.Key)
		}
		ts = append(ts, e.timeouts)
		targets = append(targets, e.target)
	}
	timeouts := translate.MaxTimeouts(ts)
	sig := fmt.Sprintf("%s|%s|%v|%s", strings.Join(g.Domains, ","), translate.MembersSignature(g.Members), timeouts,
		strings.Join(targets, ","))
	if vh := t.splitMemo[sig]; vh != nil {
		return vh, sig, nil
	}
	vh := translate.SplitVirtualHost(translate.SplitVirtualHostParams{Domains: g.Domains, Members: g.Members, Timeouts: timeouts,
		Clusters: targets, Config: t.cfg, Parts: t.parts})
	if err := vh.ValidateAll(); err != nil {
		return nil, "", fmt.Errorf("virtual host: %w", err)
	}
	return vh, sig, nil
}

// routeConfiguration returns the previous route configuration when the
// virtual hosts are the same (pointer for pointer), else a new one.
func (t *Translator) routeConfiguration(vhosts []*routev3.VirtualHost) (*routev3.RouteConfiguration, error) {
	if t.prevRoute != nil && slices.Equal(vhosts, t.prevVhosts) {
		return t.prevRoute, nil
	}
	rc, err := translate.HTTPRouteConfiguration(vhosts)
	if err != nil {
		return nil, err
	}
	t.prevVhosts, t.prevRoute = vhosts, rc
	return rc, nil
}

// revision returns one revision's virtual host, cluster and endpoints,
// reusing each of the previous ones whose inputs are unchanged.
func (t *Translator) revision(rev *revision.Revision, domains []string) (*memoEntry, error) {
	m := t.memo[rev.Key]
	timeouts := translate.TimeoutsOf(&rev.Spec)
	if m != nil && m.port == rev.Spec.Port && m.mode == rev.Mode && m.timeouts == timeouts &&
		m.protocol == rev.Spec.Protocol && m.wake == rev.Spec.Wake.ReadsRequests() &&
		slices.Equal(m.domains, domains) && slices.Equal(m.backends, rev.Backends) &&
		m.noCluster == translate.IdleRevision(t.cfg, rev) { // translate.ClusterAhead
		return m, nil
	}
	var name string
	if m != nil {
		name = m.name
	} else {
		name = revision.ClusterName(rev.Key)
	}
	target := translate.RouteTarget(t.cfg, rev, name)
	res := &revisionResources{}
	switch {
	case len(domains) == 0:
		// No host of its own (every host split: the split virtual hosts
		// route to it; or no host at all): cluster and endpoints only.
	case m != nil && slices.Equal(m.domains, domains) && m.timeouts == timeouts && m.target == target:
		res.vhost, res.vhostEnc = m.res.vhost, m.res.vhostEnc
	default:
		params := translate.VirtualHostParams{Key: rev.Key, Domains: domains, Config: t.cfg, Parts: t.parts, Name: name,
			Cluster: target, Timeouts: timeouts}
		vh := translate.RevisionVirtualHost(params)
		if err := vh.ValidateAll(); err != nil {
			return nil, fmt.Errorf("virtual host: %w", err)
		}
		switch {
		case !t.encodesVirtualHosts():
			res.vhost = vh
		case t.cfg.OnDemandHosts:
			// Validated now (a bad host is reported at start); encoded
			// when an Envoy first needs it (lazy.go).
			res.vhostEnc = lazyVirtualHost(params)
		default:
			e, err := encoded.Encode(vh)
			if err != nil {
				return nil, fmt.Errorf("virtual host: %w", err)
			}
			res.vhostEnc = e
		}
	}
	entry := &memoEntry{name: name, domains: domains, port: rev.Spec.Port, mode: rev.Mode, backends: rev.Backends,
		timeouts: timeouts, protocol: rev.Spec.Protocol, wake: rev.Spec.Wake.ReadsRequests(), target: target, noCluster: translate.IdleRevision(t.cfg, rev), res: res}
	if entry.idle() {
		return entry, nil
	}
	if m != nil && !m.idle() && m.protocol == rev.Spec.Protocol {
		// depends only on the name, protocol and Config
		res.cluster, res.clusterEnc = m.res.cluster, m.res.clusterEnc
	} else {
		c, err := translate.RevisionCluster(translate.RevisionClusterParams{Name: name, Protocol: rev.Spec.Protocol, Config: t.cfg, Parts: t.parts})
		if err != nil {
			return nil, err
		}
		if !t.encode {
			res.cluster = c
		} else if res.clusterEnc, err = encoded.Encode(c); err != nil {
			return nil, err
		}
	}
	cla, err := t.loadAssignment(rev, name)
	if err != nil {
		return nil, err
	}
	res.cla = cla
	return entry, nil
}

// EndpointChanges is the fast path for the common update: the same
// revisions with the same routing (sameRouting: hosts, traffic percent,
// tag, timeouts, protocol), only modes, backends or settings that do not
// reach Envoy changed (a mode flip, a pod becoming ready), and revisions
// waking or going idle that fastTransition allows (their cluster,
// endpoints and own virtual host change: the server stages them,
// Transition). It returns the
// revisions whose pointer changed, with their memo entries updated; ok is
// false when the change needs a full Translation (revisions added or
// removed, routing changed, a revision skipped before).
func (t *Translator) EndpointChanges(prev, snap *revision.Snapshot, skipped map[revision.Key]error) (changed []*revision.Revision, ok bool, err error) {
	if prev == nil || !snap.SameSplits(prev) {
		return nil, false, nil // a split changed: routing changed
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
		if _, bad := skipped[k]; bad || t.memo[k] == nil || !sameRouting(&p.Spec, &r.Spec) ||
			(translate.IdleRevision(t.cfg, p) != translate.IdleRevision(t.cfg, r) && !t.fastTransition(r)) {
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
// routes and cluster: only then can a change skip the full Translation
// (the fast path sends nothing but ClusterLoadAssignments).
func sameRouting(a, b *revision.Spec) bool {
	return slices.Equal(a.Hosts, b.Hosts) && a.Tag == b.Tag && equalPercent(a.TrafficPercent, b.TrafficPercent) &&
		translate.TimeoutsOf(a) == translate.TimeoutsOf(b) && a.Protocol == b.Protocol
}

func equalPercent(a, b *int32) bool {
	return (a == nil && b == nil) || (a != nil && b != nil && *a == *b)
}

func (t *Translator) loadAssignment(rev *revision.Revision, name string) (*endpointv3.ClusterLoadAssignment, error) {
	return translate.LoadAssignment(t.cfg, t.parts, rev, name)
}

// ClusterName returns the cluster (and ClusterLoadAssignment) name of a
// revision in the last translation, "" when it was not translated.
func (t *Translator) ClusterName(key revision.Key) string {
	if m := t.memo[key]; m != nil {
		return m.name
	}
	return ""
}

// LoadAssignment returns a revision's ClusterLoadAssignment from the last
// translation, nil when it was not translated or is idle (hold.go).
func (t *Translator) LoadAssignment(key revision.Key) *endpointv3.ClusterLoadAssignment {
	if m := t.memo[key]; m != nil {
		return m.res.cla
	}
	return nil
}

// EndpointsWhileStaged updates the memo of the revisions whose change
// from prev to snap reaches only their endpoints (see EndpointChanges),
// while the server waits on a staged full apply, and returns them.
// complete is false when snap holds other changes (revisions added,
// removed, rerouted, skipped, or one that failed to build): those wait for
// the full translation, which reports the error.
func (t *Translator) EndpointsWhileStaged(prev, snap *revision.Snapshot, skipped map[revision.Key]error) (changed []*revision.Revision, complete bool) {
	complete = snap.SameSplits(prev)
	for k := range snap.Changes(prev) {
		p, r := prev.Get(k), snap.Get(k)
		if p == r {
			continue
		}
		if _, bad := skipped[k]; bad || p == nil || r == nil || t.memo[k] == nil || !sameRouting(&p.Spec, &r.Spec) ||
			translate.IdleRevision(t.cfg, p) != translate.IdleRevision(t.cfg, r) {
			complete = false // waking or going idle waits for the stage too
			continue
		}
		changed = append(changed, r)
	}
	for _, r := range changed {
		m, err := t.revision(r, t.memo[r.Key].domains)
		if err != nil {
			complete = false // the full translation reports it
			continue
		}
		t.memo[r.Key] = m
	}
	return changed, complete
}
