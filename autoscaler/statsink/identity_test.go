package statsink

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"net"
	"net/url"
	"testing"

	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"
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
