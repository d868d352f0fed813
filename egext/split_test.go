package egext

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	egpb "github.com/envoyproxy/gateway/proto/extension"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/protobuf/proto"

	"github.com/thaw-dev/thaw/xds/translate"
)

// splitJSON is a RevisionSplit as EG passes it; traffic entries are
// {revisionName, percent[, tag]}.
func splitJSON(t testing.TB, name string, traffic ...map[string]any) []byte {
	t.Helper()
	list := make([]any, 0, len(traffic))
	for _, m := range traffic {
		list = append(list, m)
	}
	b, err := json.Marshal(map[string]any{"apiVersion": APIVersion, "kind": SplitKind,
		"metadata": map[string]any{"namespace": "default", "name": name, "generation": 2},
		"spec":     map[string]any{"traffic": list}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func member(name string, percent int, tag string) map[string]any {
	m := map[string]any{"revisionName": name, "percent": percent}
	if tag != "" {
		m["tag"] = tag
	}
	return m
}

func TestParseSplit(t *testing.T) {
	s, err := ParseSplit(splitJSON(t, "app", member("v1", 90, ""), member("v2", 10, "canary"), member("v0", 0, "prev")))
	if err != nil {
		t.Fatal(err)
	}
	if s.Key.String() != "default/app" || len(s.Members) != 3 || s.Members[1].Key.String() != "default/v2" ||
		s.Members[1].Percent != 10 || s.Members[1].Tag != "canary" || s.Protocol != "http1" {
		t.Errorf("ParseSplit = %+v", s)
	}
	for name, tt := range map[string]struct {
		b    []byte
		want string
	}{
		"sum 90":      {splitJSON(t, "a", member("v1", 80, ""), member("v2", 10, "")), "sum to 90"},
		"empty":       {splitJSON(t, "a"), "0 entries"},
		"twice":       {splitJSON(t, "a", member("v1", 50, ""), member("v1", 50, "")), "twice"},
		"bad name":    {splitJSON(t, "a", member("V_1", 100, "")), "revisionName"},
		"bad tag":     {splitJSON(t, "a", member("v1", 100, "Canary!")), "tag"},
		"tag twice":   {splitJSON(t, "a", member("v1", 50, "x"), member("v2", 50, "x")), "tag \"x\" twice"},
		"negative":    {splitJSON(t, "a", member("v1", 110, ""), member("v2", -10, "")), "percent"},
		"not a split": {revisionJSON(t, "default", "a", ""), "want thaw.dev/v1alpha1 RevisionSplit"},
	} {
		_, err := ParseSplit(tt.b)
		if !errors.Is(err, ErrInvalidSplit) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err %v, want ErrInvalidSplit naming %q", name, err, tt.want)
		}
	}
	if _, err := onlyBackend([][]byte{revisionJSON(t, "default", "a", ""), splitJSON(t, "s", member("a", 100, ""))}, testOptions()); !errors.Is(err, ErrTooManyRevisions) {
		t.Errorf("a Revision and a RevisionSplit in one rule: %v, want ErrTooManyRevisions", err)
	}
}

// splitTranslation runs the three hooks for one split as EG would: the
// cluster hook, the route hook, then Translate over the results.
func splitTranslation(t *testing.T, b []byte) (*routev3.Route, []*clusterv3.Cluster, []*routev3.RouteConfiguration) {
	t.Helper()
	s, err := ParseSplit(b)
	if err != nil {
		t.Fatal(err)
	}
	in := egRoute(nil, nil)
	before := proto.Clone(in)
	r, err := SplitRoute(in, s, testOptions())
	if err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(in, before) {
		t.Error("SplitRoute modified its input")
	}
	c, err := SplitCluster(egCluster(), s)
	if err != nil {
		t.Fatal(err)
	}
	rc := &routev3.RouteConfiguration{Name: "default/eg/http", VirtualHosts: []*routev3.VirtualHost{
		{Name: "default/eg/http/app_example_com", Domains: []string{"app.example.com"}, Routes: []*routev3.Route{r}},
		// a host already served: its tag host "canary-taken.example.com" exists
		{Name: "default/eg/http/taken", Domains: []string{"canary-app.example.com"}, Routes: []*routev3.Route{egRoute(nil, nil)}},
	}}
	clusters, routes, err := Translate([]*clusterv3.Cluster{c}, []*routev3.RouteConfiguration{rc}, testOptions())
	if err != nil {
		t.Fatal(err)
	}
	return r, clusters, routes
}

func TestSplitGolden(t *testing.T) {
	r, clusters, routes := splitTranslation(t, splitJSON(t, "app", member("v1", 90, ""), member("v2", 10, "canary"), member("v0", 0, "prev")))
	w := r.GetRoute().GetWeightedClusters().GetClusters()
	if len(w) != 2 || w[0].GetName() != "thaw/rev/default/v1" || w[0].GetWeight().GetValue() != 90 ||
		w[1].GetName() != "thaw/rev/default/v2" || w[1].GetWeight().GetValue() != 10 {
		t.Errorf("weighted clusters %v, want v1 90 and v2 10 (v0 at 0%% left out)", w)
	}
	if got := w[1].GetRequestHeadersToAdd()[0].GetHeader(); got.GetKey() != translate.RevisionHeader || got.GetValue() != "default/v2" {
		t.Errorf("v2 entry sets %v, want x-thaw-revision default/v2", got)
	}
	var names []string
	for _, c := range clusters {
		names = append(names, c.GetName())
	}
	if want := []string{"httproute/default/app/rule/0", "thaw/rev/default/v0", "thaw/rev/default/v1", "thaw/rev/default/v2"}; strings.Join(names, ",") != strings.Join(want, ",") {
		t.Errorf("clusters %v, want %v", names, want)
	}
	if c := clusters[2]; c.GetAltStatName() != "rev_default_v1" || c.GetEdsClusterConfig().GetServiceName() != "rev_default_v1" {
		t.Errorf("member cluster %q: alt_stat_name %q service %q", c.GetName(), c.GetAltStatName(), c.GetEdsClusterConfig().GetServiceName())
	}
	var hosts []string
	for _, vh := range routes[0].GetVirtualHosts() {
		hosts = append(hosts, vh.GetDomains()...)
	}
	// canary-app.example.com is taken: left out; prev-app.example.com added.
	if want := "app.example.com,canary-app.example.com,prev-app.example.com"; strings.Join(hosts, ",") != want {
		t.Errorf("domains %v, want %s", hosts, want)
	}
	checkGolden(t, filepath.Join("testdata", "split_route.yaml"), goldenYAML(t, r))
	checkGolden(t, filepath.Join("testdata", "split_member_cluster.yaml"), goldenYAML(t, clusters[2]))
	checkGolden(t, filepath.Join("testdata", "split_tag_vhost.yaml"), goldenYAML(t, routes[0].GetVirtualHosts()[2]))
}

// TestTranslateSharesMemberClusters: two splits naming one Revision give
// one cluster, and a Translate without thaw metadata changes nothing.
func TestTranslateSharesMemberClusters(t *testing.T) {
	a, _ := ParseSplit(splitJSON(t, "a", member("v1", 50, ""), member("v2", 50, "")))
	b, _ := ParseSplit(splitJSON(t, "b", member("v1", 100, "")))
	ca, _ := SplitCluster(egCluster(), a)
	cb, _ := SplitCluster(egCluster(), b)
	cb.Name = "httproute/default/b/rule/0"
	out, routes, err := Translate([]*clusterv3.Cluster{ca, cb}, nil, testOptions())
	if err != nil || len(out) != 4 || routes != nil {
		t.Fatalf("Translate = %d clusters, routes %v, %v; want 2 + v1 + v2 and nil routes", len(out), routes, err)
	}
	plain := []*clusterv3.Cluster{egCluster()}
	out, _, err = Translate(plain, nil, testOptions())
	if err != nil || len(out) != 1 || !proto.Equal(out[0], plain[0]) {
		t.Errorf("Translate(no split) = %v, %v; want the input", out, err)
	}
}

func TestServerSplitHooks(t *testing.T) {
	c := dialServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	good := &egpb.ExtensionResource{UnstructuredBytes: splitJSON(t, "app", member("v1", 90, ""), member("v2", 10, ""))}
	cl, err := c.PostClusterModify(ctx, &egpb.PostClusterModifyRequest{Cluster: egCluster(),
		PostClusterContext: &egpb.PostClusterExtensionContext{BackendExtensionResources: []*egpb.ExtensionResource{good}}})
	if err != nil {
		t.Fatal(err)
	}
	tr, err := c.PostTranslateModify(ctx, &egpb.PostTranslateModifyRequest{Clusters: []*clusterv3.Cluster{cl.GetCluster()}})
	if err != nil || len(tr.GetClusters()) != 3 {
		t.Fatalf("PostTranslateModify = %v, %v; want EG's cluster and two members", tr, err)
	}
	bad := &egpb.ExtensionResource{UnstructuredBytes: splitJSON(t, "app", member("v1", 90, ""))}
	rt, err := c.PostRouteModify(ctx, &egpb.PostRouteModifyRequest{Route: egRoute(nil, nil),
		PostRouteContext: &egpb.PostRouteExtensionContext{ExtensionResources: []*egpb.ExtensionResource{bad}}})
	if err != nil {
		t.Fatalf("an invalid split must not fail the hook: %v", err)
	}
	if d := rt.GetRoute().GetDirectResponse(); d.GetStatus() != 500 || !strings.Contains(d.GetBody().GetInlineString(), "sum to 90") {
		t.Errorf("invalid split route = %v, want 500 naming the sum", rt.GetRoute())
	}
}
