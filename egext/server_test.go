package egext

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	egpb "github.com/envoyproxy/gateway/proto/extension"
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
	s, err := NewServer(zaptest.NewLogger(t), testOptions())
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
	if _, err := c.PostTranslateModify(ctx, &egpb.PostTranslateModifyRequest{}); status.Code(err) != codes.Unimplemented {
		t.Errorf("PostTranslateModify: %v, want Unimplemented", err)
	}
}
