package translate

import (
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/thaw-dev/thaw/revision"
)

// splitVirtualHostPrefix starts the name of a split host's virtual host;
// revision virtual hosts are named after their cluster ("rev_..."), so the
// two never clash.
const splitVirtualHostPrefix = "split_"

// SplitVirtualHostParams are the inputs of SplitVirtualHost.
type SplitVirtualHostParams struct {
	// Domains are the split hosts (normal form, at least one).
	Domains []string
	// Members are the revisions sharing the hosts, sorted by key, each
	// with its percent set; the percents sum to 100.
	Members []SplitMember
	// Clusters, when set, holds each member's cluster (same order as
	// Members): its own, or a hold cluster while it is idle (hold.go).
	// Empty: every member's own cluster.
	Clusters []string
	// Timeouts are the route's timeouts: MaxTimeouts of the members'.
	Timeouts RouteTimeouts
	Config   *Config
	// Parts, when set, supplies shared sub-messages (the memoised
	// translator passes one per Config).
	Parts *Parts
}

// SplitVirtualHost returns the virtual host of hosts that several
// revisions share: every path goes to weighted clusters, one per member
// with a percent above 0 (its weight; a 0% member gets no traffic and is
// left out), each reaching that revision's own cluster, so the revision
// keeps its serve or proxy mode and scales on its own share. The
// x-thaw-revision header is set per weighted cluster (overwriting every
// client-sent copy, see RevisionVirtualHost), so the activator knows which revision a held request is
// for. The route carries the always-safe retry policy (retries stay on the
// chosen cluster) and Timeouts.
func SplitVirtualHost(p SplitVirtualHostParams) *routev3.VirtualHost {
	pt := p.Parts
	if pt == nil {
		pt = NewParts(p.Config)
	}
	name := splitVirtualHostPrefix + p.Domains[0]
	clusters := make([]*routev3.WeightedCluster_ClusterWeight, 0, len(p.Members))
	for i, m := range p.Members {
		if m.Percent == nil || *m.Percent == 0 {
			continue
		}
		target := revision.ClusterName(m.Key)
		if i < len(p.Clusters) && p.Clusters[i] != "" {
			target = p.Clusters[i]
		}
		wc := weightedCluster(p.Config, target)
		wc.Weight = wrapperspb.UInt32(uint32(*m.Percent))
		wc.RequestHeadersToAdd = []*corev3.HeaderValueOption{{
			Header:       &corev3.HeaderValue{Key: RevisionHeader, Value: m.Key.String()},
			AppendAction: corev3.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD,
		}}
		wc.TypedPerFilterConfig = moduleRouteConfig(p.Config, m.Key)
		clusters = append(clusters, wc)
	}
	return &routev3.VirtualHost{
		Name:    VirtualHostName(name),
		Domains: p.Domains,
		Routes: []*routev3.Route{{
			Name:  name,
			Match: pt.prefixAll,
			Action: &routev3.Route_Route{Route: &routev3.RouteAction{
				ClusterSpecifier: &routev3.RouteAction_WeightedClusters{
					WeightedClusters: &routev3.WeightedCluster{Clusters: clusters},
				},
				Timeout:     pt.duration(p.Timeouts.routeTimeout()),
				IdleTimeout: pt.duration(p.Timeouts.idleTimeout()),
				RetryPolicy: pt.retryPolicy,
			}},
			RequestHeadersToRemove: clusterHeaderRemoval(p.Config),
		}},
	}
}

// MaxTimeouts returns timeouts at least as long as each of ts: the longest
// request and hold timeouts (defaults filled in), and the longest idle
// timeout, or none (0) when any of ts has none. Envoy sets timeouts per
// route, not per weighted cluster, so a split host's route carries these:
// no member's request is cut before its own timeout.
func MaxTimeouts(ts []RouteTimeouts) RouteTimeouts {
	var out RouteTimeouts
	unlimitedIdle := false
	for _, t := range ts {
		req, hold := t.Request, t.Hold
		if req == 0 {
			req = revision.DefaultRequestTimeout
		}
		if hold == 0 {
			hold = revision.DefaultHoldTimeout
		}
		out.Request = max(out.Request, req)
		out.Hold = max(out.Hold, hold)
		if t.Idle == 0 {
			unlimitedIdle = true
		}
		out.Idle = max(out.Idle, t.Idle)
	}
	if unlimitedIdle {
		out.Idle = 0
	}
	return out
}

// SplitVirtualHostName returns the resource name of the virtual host
// SplitVirtualHost builds for domains (at least one).
func SplitVirtualHostName(domains []string) string {
	return VirtualHostName(splitVirtualHostPrefix + domains[0])
}
