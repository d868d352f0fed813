package statsink

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"net"
	"net/url"
	"testing"
	"time"

	metricsv3 "github.com/envoyproxy/go-control-plane/envoy/service/metrics/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"

	"github.com/thaw-dev/thaw/autoscaler"
	"github.com/thaw-dev/thaw/internal/certgen"
)

func TestNodeKeyTiesNodeIDToClientCertificate(t *testing.T) {
	spiffe, _ := url.Parse("spiffe://cluster.local/ns/thaw-system/sa/envoy")
	withCert := func(c *x509.Certificate) context.Context {
		st := tls.ConnectionState{}
		if c != nil {
			st.VerifiedChains = [][]*x509.Certificate{{c}}
		}
		return peer.NewContext(context.Background(), &peer.Peer{
			Addr:     &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1},
			AuthInfo: credentials.TLSInfo{State: st},
		})
	}
	tests := []struct {
		name string
		ctx  context.Context
		want string
	}{
		{"no peer", context.Background(), "envoy-1"},
		{"plaintext", peer.NewContext(context.Background(), &peer.Peer{Addr: &net.TCPAddr{}}), "envoy-1"},
		{"TLS without a client certificate", withCert(nil), "envoy-1"},
		{"common name", withCert(&x509.Certificate{Subject: pkix.Name{CommonName: "thaw-envoy"}}), "thaw-envoy/envoy-1"},
		{"URI SAN first", withCert(&x509.Certificate{Subject: pkix.Name{CommonName: "x"}, URIs: []*url.URL{spiffe}}),
			"spiffe://cluster.local/ns/thaw-system/sa/envoy/envoy-1"},
		{"no name", withCert(&x509.Certificate{}), "envoy-1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := nodeKey(tc.ctx, "envoy-1"); got != tc.want {
				t.Errorf("nodeKey = %q, want %q", got, tc.want)
			}
		})
	}
	// Two identities with one node id are two nodes.
	a := nodeKey(withCert(&x509.Certificate{Subject: pkix.Name{CommonName: "a"}}), "envoy-1")
	b := nodeKey(withCert(&x509.Certificate{Subject: pkix.Name{CommonName: "b"}}), "envoy-1")
	if a == b {
		t.Errorf("two certificate identities share node key %q", a)
	}
}

// TestMutualTLSNodeKey serves the sink over real mutual TLS (certificates
// from internal/certgen, as thaw's manifests use): the samples of a node
// name the client certificate's identity with the node id.
func TestMutualTLSNodeKey(t *testing.T) {
	set, _, err := certgen.Ensure(certgen.Set{}, certgen.Options{ServerIPs: []net.IP{net.IPv4(127, 0, 0, 1)}}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	pair := func(kp certgen.KeyPair) tls.Certificate {
		c, err := tls.X509KeyPair(kp.Cert, kp.Key)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(set.Server.CA) {
		t.Fatal("no CA in the bundle")
	}
	serverCreds := credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{pair(set.Server)},
		ClientCAs: pool, ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12})
	env := startSink(t, append(hostOptions(), grpc.Creds(serverCreds))...)
	conn, err := grpc.NewClient(env.conn.Target(), grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{
		Certificates: []tls.Certificate{pair(set.Envoy)}, RootCAs: pool, MinVersion: tls.VersionTLS12})))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	st, err := metricsv3.NewMetricsServiceClient(conn).StreamMetrics(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	env.send(t, st, envoyMsg("envoy-1", ts(1), gauge("upstream_rq_active", demoCluster, 3)))
	want := certgen.DefaultClientCommonName + "/envoy-1"
	checkSamples(t, "over mTLS", env.rec.take(), []autoscaler.Sample{sample(want, demo, 1, 3, 0)})
}
