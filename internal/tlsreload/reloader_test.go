package tlsreload

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	metricsv3 "github.com/envoyproxy/go-control-plane/envoy/service/metrics/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"k8s.io/client-go/util/cert"

	"github.com/thaw-dev/thaw/autoscaler"
	"github.com/thaw-dev/thaw/autoscaler/statsink"
	"github.com/thaw-dev/thaw/internal/certgen"
)

const serverName = "thaw-grpc.test"

// newSet makes a fresh CA, server and Envoy certificates.
func newSet(t *testing.T) certgen.Set {
	t.Helper()
	s, _, err := certgen.Ensure(certgen.Set{}, certgen.Options{ServerDNSNames: []string{serverName}}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// writeSet writes s under dir the way certgen's DirStore does (rename).
func writeSet(t *testing.T, dir string, s certgen.Set) Files {
	t.Helper()
	st := &certgen.DirStore{Dir: dir, Names: certgen.DefaultNames()}
	if err := st.Save(context.Background(), s, []string{"ca", "server", "envoy"}); err != nil {
		t.Fatal(err)
	}
	d := filepath.Join(dir, certgen.DefaultServerSecret)
	return Files{CertFile: filepath.Join(d, certgen.KeyCert), KeyFile: filepath.Join(d, certgen.KeyKey),
		ClientCAFile: filepath.Join(d, certgen.KeyCA)}
}

// startServer serves thaw's real stats sink (MetricsService, into a real
// collector) over mutual TLS from r on 127.0.0.1.
func startServer(t *testing.T, r *Reloader) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer(grpc.Creds(r.Credentials()))
	statsink.New(statsink.Options{Recorder: autoscaler.NewCollector(autoscaler.CollectorOptions{})}).Register(s)
	go func() { _ = s.Serve(ln) }()
	t.Cleanup(s.Stop)
	return ln.Addr().String()
}

// sendStats opens a new connection with the client certificate of kp (none
// when kp.Cert is nil), trusting trust for the server, and sends one
// stats message. It returns the server certificate it saw and the call's
// error.
func sendStats(t *testing.T, addr string, kp certgen.KeyPair, trust []byte) (*tls.ConnectionState, error) {
	t.Helper()
	pool, err := cert.NewPoolFromBytes(trust)
	if err != nil {
		t.Fatal(err)
	}
	cfg := &tls.Config{RootCAs: pool, ServerName: serverName, MinVersion: tls.VersionTLS12}
	if kp.Cert != nil {
		pair, err := tls.X509KeyPair(kp.Cert, kp.Key)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	var state *tls.ConnectionState
	cfg.VerifyConnection = func(cs tls.ConnectionState) error { state = &cs; return nil }
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(credentials.NewTLS(cfg)))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	stream, err := metricsv3.NewMetricsServiceClient(conn).StreamMetrics(ctx)
	if err != nil {
		return state, err
	}
	msg := &metricsv3.StreamMetricsMessage{Identifier: &metricsv3.StreamMetricsMessage_Identifier{Node: &corev3.Node{Id: "envoy-1"}}}
	if err := stream.Send(msg); err != nil {
		_, err = stream.CloseAndRecv()
		return state, err
	}
	_, err = stream.CloseAndRecv()
	return state, err
}

func TestMutualTLS(t *testing.T) {
	dir := t.TempDir()
	s := newSet(t)
	r, err := New(Options{Files: writeSet(t, dir, s)})
	if err != nil {
		t.Fatal(err)
	}
	addr := startServer(t, r)
	other := newSet(t) // another CA, same names

	if _, err := sendStats(t, addr, s.Envoy, s.Envoy.CA); err != nil {
		t.Fatalf("client certificate signed by thaw's CA: %v", err)
	}
	for name, kp := range map[string]certgen.KeyPair{
		"no client certificate":            {},
		"client certificate of another CA": other.Envoy,
		"server certificate as a client":   s.Server, // serverAuth only
	} {
		before := r.HandshakeFailures()
		if _, err := sendStats(t, addr, kp, s.Envoy.CA); err == nil {
			t.Errorf("%s: stats call accepted, want the handshake refused", name)
		} else {
			t.Logf("%s: refused: %v", name, err)
		}
		if !waitFailures(r, before) {
			t.Errorf("%s: refused handshake not counted (%d)", name, r.HandshakeFailures())
		}
	}
	// A plaintext client is refused and counted too.
	before := r.HandshakeFailures()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = conn.Write([]byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"))
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, _ = conn.Read(make([]byte, 64))
	conn.Close()
	if !waitFailures(r, before) {
		t.Errorf("plaintext client: not counted (%d)", r.HandshakeFailures())
	}
	if got := r.HandshakeFailures(); got < 4 {
		t.Errorf("HandshakeFailures = %d after four refused clients", got)
	}
}

// waitFailures waits up to 5 s for r's handshake failures to exceed
// before (the server counts after the client has seen the refusal).
func waitFailures(r *Reloader, before uint64) bool {
	for range 500 {
		if r.HandshakeFailures() > before {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return false
}

func TestRotation(t *testing.T) {
	dir := t.TempDir()
	first := newSet(t)
	r, err := New(Options{Files: writeSet(t, dir, first), CheckInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	addr := startServer(t, r)
	state, err := sendStats(t, addr, first.Envoy, first.Envoy.CA)
	if err != nil {
		t.Fatal(err)
	}
	firstSerial := state.PeerCertificates[0].SerialNumber

	// A new CA and new leaves, written over the same files.
	second := newSet(t)
	writeSet(t, dir, second)
	state, err = sendStats(t, addr, second.Envoy, second.Envoy.CA)
	if err != nil {
		t.Fatalf("handshake with the rotated certificates: %v", err)
	}
	if state.PeerCertificates[0].SerialNumber.Cmp(firstSerial) == 0 {
		t.Error("server still presents the first certificate")
	}
	if _, err := sendStats(t, addr, first.Envoy, second.Envoy.CA); err == nil {
		t.Error("client certificate of the replaced CA still accepted")
	}
	if r.Reloads() != 1 {
		t.Errorf("reloads %d, want 1", r.Reloads())
	}

	// A half-written update (a key that does not match) keeps the last
	// good configuration.
	files := r.files
	if err := os.WriteFile(files.KeyFile, first.Server.Key, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := sendStats(t, addr, second.Envoy, second.Envoy.CA); err != nil {
		t.Fatalf("bad key file broke serving: %v", err)
	}
	if r.Reloads() != 1 {
		t.Errorf("reloads %d after a bad update, want still 1", r.Reloads())
	}
}

func TestNewRefusesBadFiles(t *testing.T) {
	dir := t.TempDir()
	files := writeSet(t, dir, newSet(t))
	for name, f := range map[string]Files{
		"missing CA":     {CertFile: files.CertFile, KeyFile: files.KeyFile},
		"absent file":    {CertFile: files.CertFile, KeyFile: filepath.Join(dir, "nope"), ClientCAFile: files.ClientCAFile},
		"key as CA file": {CertFile: files.CertFile, KeyFile: files.KeyFile, ClientCAFile: files.KeyFile},
		"CA as cert":     {CertFile: files.ClientCAFile, KeyFile: files.KeyFile, ClientCAFile: files.ClientCAFile},
	} {
		if _, err := New(Options{Files: f}); !errors.Is(err, ErrInvalidFiles) {
			t.Errorf("%s: err %v, want ErrInvalidFiles", name, err)
		}
	}
}
