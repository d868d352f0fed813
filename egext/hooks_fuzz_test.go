package egext

import (
	"context"
	"testing"

	egpb "github.com/envoyproxy/gateway/proto/extension"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// Which hook a FuzzHookRequests input is for (its first byte, modulo 3).
const (
	fuzzCluster = iota
	fuzzRoute
	fuzzTranslate
)

// FuzzHookRequests: whatever EG sends to the three hooks thaw answers
// (the request's protobuf bytes as gRPC would decode them, with the
// activator module on or off), no hook panics, every answer is either a
// response or an Internal status, and a cluster or route a hook changed
// passes ValidateAll (what it returns unchanged is EG's own). The first
// byte picks the hook and the activator, the rest is the request.
func FuzzHookRequests(f *testing.F) {
	rev := &egpb.ExtensionResource{UnstructuredBytes: revisionJSON(f, "default", "app-v1", "h2c")}
	split := &egpb.ExtensionResource{UnstructuredBytes: splitJSON(f, "a", member("v1", 90, ""), member("v2", 10, "canary"))}
	bad := &egpb.ExtensionResource{UnstructuredBytes: []byte(`{"apiVersion":"thaw.dev/v1alpha1","kind":"Revision","metadata":{"name":"x"}}`)}
	seed := func(hook byte, m proto.Message) {
		b, err := proto.Marshal(m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(append([]byte{hook}, b...))
		f.Add(append([]byte{hook + 3}, b...)) // the same with the module
	}
	for _, rs := range [][]*egpb.ExtensionResource{{rev}, {split}, {bad}, {rev, rev}} {
		seed(fuzzCluster, &egpb.PostClusterModifyRequest{Cluster: egCluster(),
			PostClusterContext: &egpb.PostClusterExtensionContext{BackendExtensionResources: rs}})
		seed(fuzzRoute, &egpb.PostRouteModifyRequest{Route: egRoute(nil, nil),
			PostRouteContext: &egpb.PostRouteExtensionContext{ExtensionResources: rs}})
	}
	sc, err := SplitCluster(egCluster(), mustSplit(f, split.GetUnstructuredBytes()))
	if err != nil {
		f.Fatal(err)
	}
	seed(fuzzTranslate, &egpb.PostTranslateModifyRequest{Clusters: []*clusterv3.Cluster{sc, egCluster()},
		Routes: []*routev3.RouteConfiguration{{Name: "rc", VirtualHosts: []*routev3.VirtualHost{{Name: "vh", Domains: []string{"a.example"},
			Routes: []*routev3.Route{egRoute(nil, nil)}}}}},
		Listeners: []*listenerv3.Listener{egListener(f, "l", "rc")}})

	servers := [2]*Server{}
	for i, o := range []Options{testOptions(), moduleOptions()} {
		s, err := NewServer(zap.NewNop(), o)
		if err != nil {
			f.Fatal(err)
		}
		servers[i] = s
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) == 0 {
			return
		}
		s, hook, b := servers[int(b[0])/3%2], b[0]%3, b[1:]
		ctx := context.Background()
		check := func(err error) {
			if err != nil && status.Code(err) != codes.Internal {
				t.Fatalf("hook %d: error %v, want a response or an Internal status", hook, err)
			}
		}
		switch hook {
		case fuzzCluster:
			var req egpb.PostClusterModifyRequest
			if proto.Unmarshal(b, &req) != nil {
				return
			}
			resp, err := s.PostClusterModify(ctx, &req)
			check(err)
			if err == nil && !proto.Equal(resp.GetCluster(), req.GetCluster()) {
				if verr := resp.GetCluster().ValidateAll(); verr != nil {
					t.Fatalf("changed cluster does not validate: %v\n%v", verr, resp.GetCluster())
				}
			}
		case fuzzRoute:
			var req egpb.PostRouteModifyRequest
			if proto.Unmarshal(b, &req) != nil {
				return
			}
			resp, err := s.PostRouteModify(ctx, &req)
			check(err)
			if err == nil && !proto.Equal(resp.GetRoute(), req.GetRoute()) {
				if verr := resp.GetRoute().ValidateAll(); verr != nil {
					t.Fatalf("changed route does not validate: %v\n%v", verr, resp.GetRoute())
				}
			}
		case fuzzTranslate:
			var req egpb.PostTranslateModifyRequest
			if proto.Unmarshal(b, &req) != nil {
				return
			}
			resp, err := s.PostTranslateModify(ctx, &req)
			check(err)
			if err == nil && resp == nil {
				t.Fatal("translate: no response and no error")
			}
		}
	})
}

// mustSplit parses a RevisionSplit's JSON.
func mustSplit(tb testing.TB, b []byte) Split {
	tb.Helper()
	s, err := ParseSplit(b)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}
