package egext

import (
	"fmt"
	"slices"
	"strings"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/thaw-dev/thaw/xds/translate"
)

// metadataNamespace is the filter_metadata key under which the split hooks
// leave, on EG's cluster and route of a RevisionSplit, what the
// translation hook (Translate) needs: the member clusters to add and the
// tag hosts. EG hands Translate no backend objects, so this metadata is
// how the hooks stay pure functions of their input.
const metadataNamespace = "thaw.dev"

// SplitCluster is PostClusterModify for a RevisionSplit backend: EG's
// cluster for the rule is kept (no route uses it once SplitRoute ran) and
// gets metadata listing the member clusters, from which Translate adds
// one EDS cluster per Revision of the split.
func SplitCluster(in *clusterv3.Cluster, s Split) (*clusterv3.Cluster, error) {
	c := proto.Clone(in).(*clusterv3.Cluster)
	members := make([]any, 0, len(s.Members))
	for _, m := range s.Members {
		members = append(members, map[string]any{
			"cluster": MemberCluster(m.Key, s.Protocol), "revision": m.Key.String(), "protocol": string(s.Protocol),
		})
	}
	st, err := structpb.NewStruct(map[string]any{"split": s.Key.String(), "members": members})
	if err != nil {
		return nil, fmt.Errorf("cluster %q for %s: %w", in.GetName(), s.Key, err)
	}
	if c.Metadata == nil {
		c.Metadata = &corev3.Metadata{}
	}
	if c.Metadata.FilterMetadata == nil {
		c.Metadata.FilterMetadata = map[string]*structpb.Struct{}
	}
	c.Metadata.FilterMetadata[metadataNamespace] = st
	if err := c.ValidateAll(); err != nil {
		return nil, fmt.Errorf("cluster %q for %s: %w", in.GetName(), s.Key, err)
	}
	return c, nil
}

// SplitRoute is PostRouteModify for a RevisionSplit backend. For a route
// forwarding to a cluster it:
//   - replaces the cluster with weighted_clusters, one entry per member
//     above 0% (weight = percent) naming MemberCluster, each removing any
//     client-sent x-thaw-revision and setting its own revision, as thaw's
//     own split hosts do (translate.SplitVirtualHost); a 0% member gets none;
//     with the activator module each entry also names its revision to
//     the module (translate.ModuleRouteConfig);
//   - sets thaw's retry policy (merged into EG's) and timeouts as Route
//     does, from thaw's defaults: EG hands the hooks the RevisionSplit,
//     not its Revisions, so their own timeouts are unknown here (set the
//     HTTPRoute's timeouts.request instead);
//   - records the members' tags in the route's metadata for Translate.
//
// The result is validated.
func SplitRoute(in *routev3.Route, s Split, o Options) (*routev3.Route, error) {
	o = o.withDefaults()
	r := proto.Clone(in).(*routev3.Route)
	ra := r.GetRoute()
	if ra == nil {
		return r, nil
	}
	r.RequestHeadersToAdd = slices.DeleteFunc(r.RequestHeadersToAdd, func(h *corev3.HeaderValueOption) bool {
		return strings.EqualFold(h.GetHeader().GetKey(), translate.RevisionHeader)
	})
	var weighted []*routev3.WeightedCluster_ClusterWeight
	var tags []any
	for _, m := range s.Members {
		name := MemberCluster(m.Key, s.Protocol)
		if m.Tag != "" {
			tags = append(tags, map[string]any{"tag": m.Tag, "cluster": name, "revision": m.Key.String()})
		}
		if m.Percent == 0 {
			continue
		}
		weighted = append(weighted, &routev3.WeightedCluster_ClusterWeight{
			Name:   name,
			Weight: wrapperspb.UInt32(m.Percent),
			RequestHeadersToAdd: []*corev3.HeaderValueOption{{
				Header:       &corev3.HeaderValue{Key: translate.RevisionHeader, Value: m.Key.String()},
				AppendAction: corev3.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD,
			}},
			// With the activator module: the member's revision, as on
			// thaw's own split hosts (nil without it).
			TypedPerFilterConfig: translate.ModuleRouteConfig(moduleConfig(o), m.Key),
		})
	}
	ra.ClusterSpecifier = &routev3.RouteAction_WeightedClusters{WeightedClusters: &routev3.WeightedCluster{Clusters: weighted}}
	thaw, err := translate.RevisionRetryPolicy()
	if err != nil {
		return nil, err
	}
	ra.RetryPolicy = mergeRetryPolicy(ra.GetRetryPolicy(), thaw)
	applyTimeouts(ra, translate.TimeoutsOf(&o.Defaults))
	if len(tags) > 0 {
		st, err := structpb.NewStruct(map[string]any{"split": s.Key.String(), "tags": tags})
		if err != nil {
			return nil, fmt.Errorf("route %q for %s: %w", in.GetName(), s.Key, err)
		}
		if r.Metadata == nil {
			r.Metadata = &corev3.Metadata{}
		}
		if r.Metadata.FilterMetadata == nil {
			r.Metadata.FilterMetadata = map[string]*structpb.Struct{}
		}
		r.Metadata.FilterMetadata[metadataNamespace] = st
	}
	if err := r.ValidateAll(); err != nil {
		return nil, fmt.Errorf("route %q for %s: %w", in.GetName(), s.Key, err)
	}
	return r, nil
}
