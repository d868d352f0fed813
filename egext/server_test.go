package egext

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	egpb "github.com/envoyproxy/gateway/proto/extension"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/zap/zaptest"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// dialServer serves a Server on loopback and returns EG's client for it.
func dialServer(t *testing.T) egpb.EnvoyGatewayExtensionClient {
	t.Helper()
	return dialServerWith(t, testOptions())
}

// dialServerWith is dialServer with opts.
func dialServerWith(t *testing.T, opts Options) egpb.EnvoyGatewayExtensionClient {
	t.Helper()
	s, err := NewServer(zaptest.NewLogger(t), opts)
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer()
	s.Register(g)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go g.Serve(ln)
	t.Cleanup(g.Stop)
	conn, err := grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return egpb.NewEnvoyGatewayExtensionClient(conn)
}

func TestServerHooks(t *testing.T) {
	c := dialServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	rev := &egpb.ExtensionResource{UnstructuredBytes: revisionJSON(t, "default", "app-v1", "h2c")}

	cl, err := c.PostClusterModify(ctx, &egpb.PostClusterModifyRequest{Cluster: egCluster(),
		PostClusterContext: &egpb.PostClusterExtensionContext{BackendExtensionResources: []*egpb.ExtensionResource{rev}}})
	if err != nil {
		t.Fatalf("PostClusterModify: %v", err)
	}
	if cl.GetCluster().GetEdsClusterConfig().GetServiceName() != "rev_default_app-v1" || len(cl.GetCluster().GetTypedExtensionProtocolOptions()) != 1 {
		t.Errorf("cluster %v: want EDS rev_default_app-v1 with h2c options", cl.GetCluster())
	}
	rt, err := c.PostRouteModify(ctx, &egpb.PostRouteModifyRequest{Route: egRoute(nil, nil),
		PostRouteContext: &egpb.PostRouteExtensionContext{ExtensionResources: []*egpb.ExtensionResource{rev}}})
	if err != nil {
		t.Fatalf("PostRouteModify: %v", err)
	}
	if rt.GetRoute().GetRoute().GetRetryPolicy() == nil {
		t.Error("route has no retry policy")
	}

	// No Revision: unchanged.
	plain, err := c.PostClusterModify(ctx, &egpb.PostClusterModifyRequest{Cluster: egCluster()})
	if err != nil || !proto.Equal(plain.GetCluster(), egCluster()) {
		t.Errorf("cluster without Revision: %v, %v; want it unchanged", plain.GetCluster(), err)
	}
	// Two Revisions in one rule (EG gives the hooks no weights): the
	// cluster stays EG's and the route answers 500, never a hook error
	// (EG would then skip its whole translation).
	two := []*egpb.ExtensionResource{rev, {UnstructuredBytes: revisionJSON(t, "default", "app-v2", "")}}
	cl2, err := c.PostClusterModify(ctx, &egpb.PostClusterModifyRequest{Cluster: egCluster(),
		PostClusterContext: &egpb.PostClusterExtensionContext{BackendExtensionResources: two}})
	if err != nil || !proto.Equal(cl2.GetCluster(), egCluster()) {
		t.Errorf("two Revisions: cluster %v, %v; want EG's unchanged", cl2.GetCluster(), err)
	}
	rt2, err := c.PostRouteModify(ctx, &egpb.PostRouteModifyRequest{Route: egRoute(nil, nil),
		PostRouteContext: &egpb.PostRouteExtensionContext{ExtensionResources: two}})
	if err != nil || rt2.GetRoute().GetDirectResponse().GetStatus() != 500 ||
		!strings.Contains(rt2.GetRoute().GetDirectResponse().GetBody().GetInlineString(), "more than one Revision") {
		t.Errorf("two Revisions: route %v, %v; want a 500 naming the reason", rt2.GetRoute(), err)
	}
	// A hook thaw does not implement.
	if _, err := c.PostHTTPListenerModify(ctx, &egpb.PostHTTPListenerModifyRequest{}); status.Code(err) != codes.Unimplemented {
		t.Errorf("PostHTTPListenerModify: %v, want Unimplemented", err)
	}
}

func TestServerHookMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	opts := testOptions()
	opts.Metrics = reg
	s, err := NewServer(zaptest.NewLogger(t), opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	good := &egpb.ExtensionResource{UnstructuredBytes: revisionJSON(t, "default", "app-v1", "h2c")}
	other := &egpb.ExtensionResource{UnstructuredBytes: revisionJSON(t, "default", "app-v2", "h2c")}
	cluster := func(rs ...*egpb.ExtensionResource) {
		if _, err := s.PostClusterModify(ctx, &egpb.PostClusterModifyRequest{Cluster: egCluster(),
			PostClusterContext: &egpb.PostClusterExtensionContext{BackendExtensionResources: rs}}); err != nil {
			t.Fatal(err)
		}
	}
	route := func(rs ...*egpb.ExtensionResource) {
		if _, err := s.PostRouteModify(ctx, &egpb.PostRouteModifyRequest{Route: egRoute(nil, nil),
			PostRouteContext: &egpb.PostRouteExtensionContext{ExtensionResources: rs}}); err != nil {
			t.Fatal(err)
		}
	}
	cluster(good)
	cluster(good)
	cluster()
	cluster(good, other)
	route(good)
	route()
	route()
	route(good, other)
	for _, tc := range []struct {
		hook, outcome string
		want          float64
	}{
		{"cluster", outcomeModified, 2}, {"cluster", outcomeUnchanged, 1}, {"cluster", outcomeInvalid, 1},
		{"route", outcomeModified, 1}, {"route", outcomeUnchanged, 2}, {"route", outcomeInvalid, 1},
		{"route", outcomeError, 0},
	} {
		if got := testutil.ToFloat64(s.m.calls.WithLabelValues(tc.hook, tc.outcome)); got != tc.want {
			t.Errorf("thaw_eg_hook_calls_total{hook=%q,outcome=%q} = %v, want %v", tc.hook, tc.outcome, got, tc.want)
		}
	}
	if n := testutil.CollectAndCount(s.m.seconds); n != 2 {
		t.Errorf("thaw_eg_hook_duration_seconds: %d series, want 2 (cluster, route)", n)
	}
	// A second server on the same registry is refused at construction.
	if _, err := NewServer(zaptest.NewLogger(t), opts); err == nil {
		t.Error("second NewServer on one registry: no error")
	}
}
