package tlsreload

import (
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"k8s.io/client-go/util/cert"
)

// TestHTTP1ServerConfig: the module server's TLS negotiates http/1.1 (the
// module's own HTTP/1.1 through Envoy's TCP bridge) with the same mutual
// TLS as the gRPC port: the fleet's client certificate is accepted, a
// client without one is refused at the handshake.
func TestHTTP1ServerConfig(t *testing.T) {
	set := newSet(t)
	r, err := New(Options{Files: writeSet(t, t.TempDir(), set)})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		io.WriteString(w, req.Proto)
	})}
	go func() { _ = srv.Serve(tls.NewListener(ln, r.HTTP1ServerConfig())) }()
	t.Cleanup(func() { srv.Close() })

	pool, err := cert.NewPoolFromBytes(set.Envoy.CA)
	if err != nil {
		t.Fatal(err)
	}
	dial := func(withCert bool) (*tls.Conn, error) {
		cfg := &tls.Config{RootCAs: pool, ServerName: serverName, MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"}}
		if withCert {
			pair, err := tls.X509KeyPair(set.Envoy.Cert, set.Envoy.Key)
			if err != nil {
				t.Fatal(err)
			}
			cfg.Certificates = []tls.Certificate{pair}
		}
		c, err := tls.Dial("tcp", ln.Addr().String(), cfg)
		if err != nil {
			return nil, err
		}
		// TLS 1.3 reports a refused client certificate on the first read.
		if _, err := c.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")); err != nil {
			c.Close()
			return nil, err
		}
		return c, nil
	}
	c, err := dial(true)
	if err != nil {
		t.Fatalf("fleet certificate refused: %v", err)
	}
	if p := c.ConnectionState().NegotiatedProtocol; p != "http/1.1" {
		t.Errorf("ALPN %q, want http/1.1", p)
	}
	b, err := io.ReadAll(c)
	c.Close()
	if err != nil || !strings.Contains(string(b), "HTTP/1.1 200") || !strings.HasSuffix(string(b), "HTTP/1.1") {
		t.Errorf("answer %q, %v", b, err)
	}
	if c, err := dial(false); err == nil {
		_, err = io.ReadAll(c)
		c.Close()
		if err == nil {
			t.Error("client without a certificate was served")
		}
	}
}
