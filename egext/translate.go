package egext

import (
	"fmt"
	"slices"
	"strings"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/protobuf/proto"

	"github.com/thaw-dev/thaw/revision"
	"github.com/thaw-dev/thaw/xds/translate"
)

// Translate is PostTranslateModify as a pure function. EG's returned
// lists replace its own, so every input cluster and route configuration
// comes back, and:
//   - for every member named in a cluster's thaw.dev metadata
//     (SplitCluster) one EDS cluster MemberCluster is added, built exactly
//     as a single Revision's (translate.ExternalRevisionCluster: assignment and
//     alt_stat_name rev_<ns>_<name>, so the revision scales on its own
//     share), once however many splits name it;
//   - for every route with tags in its thaw.dev metadata (SplitRoute) and
//     every non-wildcard domain of its virtual host, a virtual host
//     "<tag>-<domain>" routes the same matches to that member alone. A tag
//     host that the route configuration already serves is left out
//     (Envoy refuses a domain twice); so is every tag host of a route
//     configuration that would not validate with them. Needs EG's translation hook to
//     include routes (translation.route.includeAll); routes is nil
//     otherwise and tags are then not served.
//
// New resources are sorted by name (deterministic output) and validated.
func Translate(clusters []*clusterv3.Cluster, routes []*routev3.RouteConfiguration, o Options) ([]*clusterv3.Cluster, []*routev3.RouteConfiguration, error) {
	o = o.withDefaults()
	have := make(map[string]bool, len(clusters))
	for _, c := range clusters {
		have[c.GetName()] = true
	}
	type member struct {
		key      revision.Key
		protocol revision.Protocol
	}
	add := map[string]member{}
	for _, c := range clusters {
		md := c.GetMetadata().GetFilterMetadata()[metadataNamespace]
		for _, v := range md.GetFields()["members"].GetListValue().GetValues() {
			f := v.GetStructValue().GetFields()
			name := f["cluster"].GetStringValue()
			key, err := revision.ParseKey(f["revision"].GetStringValue())
			if name == "" || err != nil || have[name] {
				continue
			}
			add[name] = member{key: key, protocol: revision.Protocol(f["protocol"].GetStringValue())}
		}
	}
	out := slices.Clone(clusters)
	if len(add) > 0 {
		src, err := translate.ExternalEDSConfigSource(o.XDSCluster, o.InitialFetchTimeout)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: %w", ErrInvalidOptions, err)
		}
		names := make([]string, 0, len(add))
		for n := range add {
			names = append(names, n)
		}
		slices.Sort(names)
		for _, n := range names {
			m := add[n]
			c, err := translate.ExternalRevisionCluster(translate.ExternalRevisionClusterParams{
				Name: n, Key: m.key, Protocol: m.protocol, EDSConfig: src, Config: &o.XDS,
			})
			if err != nil {
				return nil, nil, fmt.Errorf("cluster %q for %s: %w", n, m.key, err)
			}
			out = append(out, c)
		}
	}
	outRoutes := make([]*routev3.RouteConfiguration, 0, len(routes))
	for _, rc := range routes {
		t, err := tagHosts(rc, o)
		if err != nil {
			return nil, nil, err
		}
		outRoutes = append(outRoutes, t)
	}
	if routes == nil {
		outRoutes = nil
	}
	return out, outRoutes, nil
}

// tagHosts returns rc with the tag virtual hosts of its split routes
// added (see Translate), or rc itself when it has none.
func tagHosts(rc *routev3.RouteConfiguration, o Options) (*routev3.RouteConfiguration, error) {
	domains := map[string]bool{}
	for _, vh := range rc.GetVirtualHosts() {
		for _, d := range vh.GetDomains() {
			domains[strings.ToLower(d)] = true
		}
	}
	byHost := map[string]*routev3.VirtualHost{}
	for _, vh := range rc.GetVirtualHosts() {
		for _, r := range vh.GetRoutes() {
			if r.GetRoute() == nil {
				continue
			}
			tags := r.GetMetadata().GetFilterMetadata()[metadataNamespace].GetFields()["tags"].GetListValue().GetValues()
			for _, tv := range tags {
				f := tv.GetStructValue().GetFields()
				tag, cluster, rev := f["tag"].GetStringValue(), f["cluster"].GetStringValue(), f["revision"].GetStringValue()
				if tag == "" || cluster == "" || rev == "" {
					continue
				}
				for _, d := range vh.GetDomains() {
					if strings.Contains(d, "*") {
						continue
					}
					host := strings.ToLower(tag + "-" + d)
					if domains[host] {
						continue
					}
					tvh := byHost[host]
					if tvh == nil {
						tvh = &routev3.VirtualHost{Name: vh.GetName() + "/thaw-tag/" + host, Domains: []string{host}}
						byHost[host] = tvh
					}
					tvh.Routes = append(tvh.Routes, tagRoute(r, tag, cluster, rev, o))
				}
			}
		}
	}
	if len(byHost) == 0 {
		return rc, nil
	}
	out := proto.Clone(rc).(*routev3.RouteConfiguration)
	hosts := make([]string, 0, len(byHost))
	for h := range byHost {
		hosts = append(hosts, h)
	}
	slices.Sort(hosts)
	for _, h := range hosts {
		out.VirtualHosts = append(out.VirtualHosts, byHost[h])
	}
	if out.ValidateAll() != nil {
		// Bad input (a tag host Envoy refuses) never fails the hook: with
		// failOpen false that would freeze EG's whole translation. The
		// route configuration goes out without tag hosts.
		return rc, nil
	}
	return out, nil
}

// tagRoute is split route r sending every request to one member's cluster
// (with the activator module, naming that member's revision to it).
func tagRoute(r *routev3.Route, tag, cluster, rev string, o Options) *routev3.Route {
	t := proto.Clone(r).(*routev3.Route)
	t.Name = r.GetName() + "/tag/" + tag
	delete(t.GetMetadata().GetFilterMetadata(), metadataNamespace)
	if len(t.GetMetadata().GetFilterMetadata()) == 0 && len(t.GetMetadata().GetTypedFilterMetadata()) == 0 {
		t.Metadata = nil
	}
	t.GetRoute().ClusterSpecifier = &routev3.RouteAction_Cluster{Cluster: cluster}
	// The overwrite replaces every client copy (no removal needed, see
	// translate.RevisionVirtualHost).
	t.RequestHeadersToAdd = append(t.RequestHeadersToAdd, &corev3.HeaderValueOption{
		Header:       &corev3.HeaderValue{Key: translate.RevisionHeader, Value: rev},
		AppendAction: corev3.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD,
	})
	if key, err := revision.ParseKey(rev); err == nil {
		setModuleConfig(&t.TypedPerFilterConfig, translate.ModuleRouteConfig(moduleConfig(o), key))
	}
	return t
}
