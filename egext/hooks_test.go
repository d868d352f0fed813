package egext

import (
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
	"sigs.k8s.io/yaml"

	"github.com/thaw-dev/thaw/revision"
	"github.com/thaw-dev/thaw/xds/translate"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/")

// revisionJSON is a Revision as EG passes it (an unstructured object).
func revisionJSON(t testing.TB, ns, name, protocol string) []byte {
	return revisionJSONWith(t, ns, name, protocol, nil)
}

// revisionJSONWith is revisionJSON with spec.autoscaling set.
func revisionJSONWith(t testing.TB, ns, name, protocol string, autoscaling map[string]any) []byte {
	t.Helper()
	spec := map[string]any{"scaleTargetRef": map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": name},
		"port": 8080}
	if protocol != "" {
		spec["protocol"] = protocol
	}
	if autoscaling != nil {
		spec["autoscaling"] = autoscaling
	}
	b, err := json.Marshal(map[string]any{"apiVersion": APIVersion, "kind": Kind,
		"metadata": map[string]any{"namespace": ns, "name": name, "generation": 3}, "spec": spec})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// egCluster is a cluster as EG v1.9 builds it for a custom backend: EDS
// over EG's ADS, EG's name and metadata.
func egCluster() *clusterv3.Cluster {
	md, _ := structpb.NewStruct(map[string]any{"resources": []any{map[string]any{"kind": "HTTPRoute", "name": "app", "namespace": "default"}}})
	return &clusterv3.Cluster{
		Name:                 "httproute/default/app/rule/0",
		ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_EDS},
		EdsClusterConfig: &clusterv3.Cluster_EdsClusterConfig{ServiceName: "httproute/default/app/rule/0",
			EdsConfig: &corev3.ConfigSource{ConfigSourceSpecifier: &corev3.ConfigSource_Ads{Ads: &corev3.AggregatedConfigSource{}}, ResourceApiVersion: corev3.ApiVersion_V3}},
		ConnectTimeout:                durationpb.New(10 * time.Second),
		LbPolicy:                      clusterv3.Cluster_LEAST_REQUEST,
		PerConnectionBufferLimitBytes: wrapperspb.UInt32(32768),
		Metadata:                      &corev3.Metadata{FilterMetadata: map[string]*structpb.Struct{"envoy-gateway": md}},
	}
}

// egRoute is a route as EG builds it for an HTTPRoute rule.
func egRoute(timeout *durationpb.Duration, retry *routev3.RetryPolicy) *routev3.Route {
	return &routev3.Route{
		Name:  "httproute/default/app/rule/0/match/0/app_example_com",
		Match: &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/"}},
		Action: &routev3.Route_Route{Route: &routev3.RouteAction{
			ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: "httproute/default/app/rule/0"},
			Timeout:          timeout,
			RetryPolicy:      retry,
		}},
		RequestHeadersToAdd: []*corev3.HeaderValueOption{{Header: &corev3.HeaderValue{Key: "X-Thaw-Revision", Value: "spoofed"}}},
	}
}

func testOptions() Options {
	return Options{XDS: translate.DefaultConfig(), InitialFetchTimeout: 10 * time.Second}
}

func TestClusterGolden(t *testing.T) {
	for _, tt := range []struct{ name, protocol string }{{"http1", ""}, {"h2c", "h2c"}} {
		t.Run(tt.name, func(t *testing.T) {
			rev, err := ParseRevision(revisionJSON(t, "default", "app-v1", tt.protocol), revision.DefaultSpec(), revision.Limits{})
			if err != nil {
				t.Fatal(err)
			}
			in := egCluster()
			before := proto.Clone(in)
			c, err := Cluster(in, rev, testOptions())
			if err != nil {
				t.Fatal(err)
			}
			if !proto.Equal(in, before) {
				t.Error("Cluster modified its input")
			}
			if c.GetName() != in.GetName() || c.GetAltStatName() != "rev_default_app-v1" ||
				c.GetEdsClusterConfig().GetServiceName() != "rev_default_app-v1" {
				t.Errorf("name %q alt_stat_name %q service_name %q", c.GetName(), c.GetAltStatName(), c.GetEdsClusterConfig().GetServiceName())
			}
			src := c.GetEdsClusterConfig().GetEdsConfig()
			if src.GetInitialFetchTimeout().AsDuration() <= 0 || src.GetApiConfigSource().GetApiType() != corev3.ApiConfigSource_DELTA_GRPC ||
				src.GetApiConfigSource().GetGrpcServices()[0].GetEnvoyGrpc().GetClusterName() != translate.XDSClusterName {
				t.Errorf("eds_config = %v", src)
			}
			checkGolden(t, filepath.Join("testdata", "cluster_"+tt.name+".yaml"), goldenYAML(t, c))
		})
	}
}

func TestRouteGolden(t *testing.T) {
	egRetry := &routev3.RetryPolicy{RetryOn: "5xx,connect-failure", NumRetries: wrapperspb.UInt32(1)}
	timeouts := map[string]any{"requestTimeout": "30s", "idleTimeout": "2m", "holdTimeout": "20s"}
	for _, tt := range []struct {
		name        string
		route       *routev3.Route
		autoscaling map[string]any
		want, idle  time.Duration
	}{
		{"default", egRoute(nil, nil), nil, revision.DefaultRequestTimeout + revision.DefaultHoldTimeout, 0},
		{"eg_timeout_and_retry", egRoute(durationpb.New(15*time.Second), egRetry), nil, 15*time.Second + revision.DefaultHoldTimeout, 0},
		// The Revision's own request, idle and hold timeouts.
		{"revision_timeouts", egRoute(nil, nil), timeouts, 50 * time.Second, 140 * time.Second},
		// The HTTPRoute's request timeout wins; hold and idle stay the Revision's.
		{"eg_timeout_revision_hold", egRoute(durationpb.New(15*time.Second), nil), timeouts, 35 * time.Second, 140 * time.Second},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rev, err := ParseRevision(revisionJSONWith(t, "default", "app-v1", "", tt.autoscaling), revision.DefaultSpec(), revision.Limits{})
			if err != nil {
				t.Fatal(err)
			}
			r, err := Route(tt.route, rev)
			if err != nil {
				t.Fatal(err)
			}
			if got := r.GetRoute().GetTimeout().AsDuration(); got != tt.want {
				t.Errorf("timeout %s, want %s", got, tt.want)
			}
			if got := r.GetRoute().GetIdleTimeout().AsDuration(); got != tt.idle {
				t.Errorf("idle timeout %s, want %s", got, tt.idle)
			}
			var values []string
			for _, h := range r.GetRequestHeadersToAdd() {
				if h.GetHeader().GetKey() == translate.RevisionHeader || h.GetHeader().GetKey() == "X-Thaw-Revision" {
					values = append(values, h.GetHeader().GetValue())
				}
			}
			if len(values) != 1 || values[0] != "default/app-v1" {
				t.Errorf("x-thaw-revision values %v, want only default/app-v1", values)
			}
			checkGolden(t, filepath.Join("testdata", "route_"+tt.name+".yaml"), goldenYAML(t, r))
		})
	}
}

func TestRouteLeavesDirectResponses(t *testing.T) {
	in := &routev3.Route{Match: &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/"}},
		Action: &routev3.Route_DirectResponse{DirectResponse: &routev3.DirectResponseAction{Status: 500}}}
	rev := Revision{Key: revision.Key{Namespace: "default", Name: "a"}}
	r, err := Route(in, rev)
	if err != nil || !proto.Equal(r, in) {
		t.Fatalf("Route(direct response) = %v, %v; want it unchanged", r, err)
	}
}

func TestRevisionErrors(t *testing.T) {
	bad := func(mutate func(o map[string]any)) []byte {
		var o map[string]any
		if err := json.Unmarshal(revisionJSON(t, "default", "a", ""), &o); err != nil {
			t.Fatal(err)
		}
		mutate(o)
		b, _ := json.Marshal(o)
		return b
	}
	for name, b := range map[string][]byte{
		"not json":      []byte("{"),
		"wrong version": bad(func(o map[string]any) { o["apiVersion"] = "thaw.dev/v9" }),
		"no namespace":  bad(func(o map[string]any) { delete(o["metadata"].(map[string]any), "namespace") }),
		"bad protocol":  bad(func(o map[string]any) { o["spec"].(map[string]any)["protocol"] = "h3" }),
		"bad timeout": bad(func(o map[string]any) {
			o["spec"].(map[string]any)["autoscaling"] = map[string]any{"requestTimeout": "forever"}
		}),
		"hold above budget": bad(func(o map[string]any) {
			o["spec"].(map[string]any)["autoscaling"] = map[string]any{"holdTimeout": "10m"}
		}),
	} {
		if _, err := ParseRevision(b, revision.DefaultSpec(), revision.Limits{HoldBudget: 2 * time.Minute}); !errors.Is(err, ErrInvalidRevision) {
			t.Errorf("%s: err %v, want ErrInvalidRevision", name, err)
		}
	}
	other := []byte(`{"apiVersion":"example.com/v1","kind":"Filter","metadata":{"name":"f","namespace":"default"}}`)
	if _, err := onlyBackend([][]byte{other}, testOptions()); !errors.Is(err, ErrNoRevision) {
		t.Errorf("only a filter: %v, want ErrNoRevision", err)
	}
	two := [][]byte{revisionJSON(t, "default", "a", ""), other, revisionJSON(t, "default", "b", "")}
	if _, err := onlyBackend(two, testOptions()); !errors.Is(err, ErrTooManyRevisions) {
		t.Errorf("two Revisions: %v, want ErrTooManyRevisions", err)
	}
	if _, err := Cluster(egCluster(), Revision{Key: revision.Key{Namespace: "d", Name: "a"}},
		Options{XDS: translate.DefaultConfig(), InitialFetchTimeout: -time.Second}); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("negative initial fetch timeout: %v, want ErrInvalidOptions", err)
	}
}

// goldenYAML renders m as YAML through protojson (Envoy field names),
// normalised by encoding/json so protojson's randomised spacing never
// reaches the file.
func goldenYAML(t *testing.T, m proto.Message) []byte {
	t.Helper()
	b, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	j, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	y, err := yaml.JSONToYAML(j)
	if err != nil {
		t.Fatal(err)
	}
	return y
}

// checkGolden compares got with the golden file, or rewrites it with
// -update.
func checkGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden (run with -update to create): %v", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s mismatch (-want +got; rerun with -update if intended):\n%s", path, diff)
	}
}
