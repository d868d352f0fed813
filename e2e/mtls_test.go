//go:build e2e

package e2e

import (
	"context"
	"crypto/tls"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"k8s.io/client-go/util/cert"

	"github.com/thaw-dev/thaw/envoy"
	"github.com/thaw-dev/thaw/internal/certgen"
	"github.com/thaw-dev/thaw/internal/tlsreload"
	"github.com/thaw-dev/thaw/revision"
)

const mtlsServerName = "thaw-grpc.thaw-system.svc"

// writeEnvoyTLS renders the SDS files for an Envoy whose certificate
// directory is certDir and returns its ClientTLS.
func writeEnvoyTLS(t *testing.T, certDir string) *envoy.ClientTLS {
	t.Helper()
	c := &envoy.ClientTLS{CertDir: certDir, SDSDir: t.TempDir(), ServerName: mtlsServerName}
	files, err := envoy.RenderSDS(*c)
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(c.SDSDir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

// testMutualTLS writes certgen's certificates (server name
// mtlsServerName) into a temp directory and returns thaw's server
// credentials (through tlsreload) and Envoy's side of the bootstrap.
func testMutualTLS(t *testing.T) (grpc.ServerOption, *envoy.ClientTLS) {
	t.Helper()
	dir := t.TempDir()
	store := &certgen.DirStore{Dir: dir, Names: certgen.DefaultNames()}
	if _, err := certgen.Run(context.Background(), store, certgen.Options{ServerDNSNames: []string{mtlsServerName}}, time.Now()); err != nil {
		t.Fatal(err)
	}
	srv := filepath.Join(dir, certgen.DefaultServerSecret)
	r, err := tlsreload.New(tlsreload.Options{Files: tlsreload.Files{CertFile: filepath.Join(srv, "tls.crt"),
		KeyFile: filepath.Join(srv, "tls.key"), ClientCAFile: filepath.Join(srv, "ca.crt")}})
	if err != nil {
		t.Fatal(err)
	}
	return grpc.Creds(credentials.NewTLS(r.ServerConfig())), writeEnvoyTLS(t, filepath.Join(dir, certgen.DefaultEnvoySecret))
}

// intruderADS opens a delta ADS stream to addr with the given transport
// credentials, as node "intruder", and returns the error of the first
// receive (nil means thaw answered).
func intruderADS(t *testing.T, addr string, creds credentials.TransportCredentials) error {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	stream, err := discoveryv3.NewAggregatedDiscoveryServiceClient(conn).DeltaAggregatedResources(ctx)
	if err != nil {
		return err
	}
	if err := stream.Send(&discoveryv3.DeltaDiscoveryRequest{Node: &corev3.Node{Id: "intruder"},
		TypeUrl: "type.googleapis.com/envoy.config.cluster.v3.Cluster"}); err != nil {
		_, err = stream.Recv()
		return err
	}
	_, err = stream.Recv()
	return err
}

// TestEnvoyMutualTLS runs thaw's xDS server behind mutual TLS (certificates
// from certgen, served through tlsreload) with a real Envoy presenting its
// client certificate from the bootstrap's file-based SDS: Envoy gets its
// configuration and serves traffic, clients without a certificate (TLS or
// plaintext) or with one from another CA are refused and never become xDS
// nodes, and renewed certificates are picked up on both sides without a
// restart.
func TestEnvoyMutualTLS(t *testing.T) {
	dir := t.TempDir()
	store := &certgen.DirStore{Dir: dir, Names: certgen.DefaultNames()}
	opts := certgen.Options{ServerDNSNames: []string{mtlsServerName}}
	if _, err := certgen.Run(context.Background(), store, opts, time.Now()); err != nil {
		t.Fatal(err)
	}
	serverDir := filepath.Join(dir, certgen.DefaultServerSecret)
	r, err := tlsreload.New(tlsreload.Options{CheckInterval: -1, Logger: zaptest.NewLogger(t), Files: tlsreload.Files{
		CertFile: filepath.Join(serverDir, "tls.crt"), KeyFile: filepath.Join(serverDir, "tls.key"),
		ClientCAFile: filepath.Join(serverDir, "ca.crt")}})
	if err != nil {
		t.Fatal(err)
	}
	envoyDir := filepath.Join(dir, certgen.DefaultEnvoySecret)
	b := startBackend(t, "warm")
	key := revision.Key{Namespace: "e2e", Name: "hello"}
	env := startXDSEnv(t, xdsEnvOptions{logger: zaptest.NewLogger(t, zaptest.Level(zap.InfoLevel)),
		grpcOpts: []grpc.ServerOption{grpc.Creds(credentials.NewTLS(r.ServerConfig()))},
		tls:      writeEnvoyTLS(t, envoyDir),
		setup: func(reg *revision.Registry) {
			spec := revision.DefaultSpec()
			spec.Hosts = []string{"hello.test"}
			reg.SetBackends(key, []revision.Backend{b.addr()})
			reg.SetMode(key, revision.ModeServe)
			reg.Upsert(key, spec)
		}})
	env.waitServed(t, "hello.test", "backend=warm")

	set, err := store.Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	trust, err := cert.NewPoolFromBytes(set.Envoy.CA)
	if err != nil {
		t.Fatal(err)
	}
	other, _, err := certgen.Ensure(certgen.Set{}, opts, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	otherPair, err := tls.X509KeyPair(other.Envoy.Cert, other.Envoy.Key)
	if err != nil {
		t.Fatal(err)
	}
	for name, creds := range map[string]credentials.TransportCredentials{
		"plaintext":                        insecure.NewCredentials(),
		"TLS without a client certificate": credentials.NewTLS(&tls.Config{RootCAs: trust, ServerName: mtlsServerName}),
		"client certificate of another CA": credentials.NewTLS(&tls.Config{RootCAs: trust, ServerName: mtlsServerName,
			Certificates: []tls.Certificate{otherPair}}),
	} {
		if err := intruderADS(t, env.grpcAddr, creds); err == nil {
			t.Errorf("%s: thaw answered an ADS stream, want the connection refused", name)
		} else {
			t.Logf("%s: refused: %v", name, err)
		}
	}
	if nodes := env.srv.Nodes(); len(nodes) != 1 {
		t.Errorf("xDS nodes %+v, want only the authenticated Envoy", nodes)
	}

	// Renewal: new server and client certificates (new SANs, new CN) under
	// the same files.
	opts.ServerDNSNames = append(opts.ServerDNSNames, "thaw-grpc.renewed")
	opts.ClientCommonName = "thaw-envoy-renewed"
	changed, err := certgen.Run(context.Background(), store, opts, time.Now())
	if err != nil || len(changed) != 2 {
		t.Fatalf("renewal changed %v (%v), want server and envoy", changed, err)
	}
	renewed, err := store.Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	envoyCert, _ := cert.ParseCertsPEM(renewed.Envoy.Cert)
	serial := fmt.Sprintf("%x", envoyCert[0].SerialNumber)
	err = pollFor(t, func() bool {
		body, _, err := env.envoy.Admin(context.Background(), "/certs")
		return err == nil && strings.Contains(strings.ToLower(body), serial)
	})
	if err != nil {
		body, _, _ := env.envoy.Admin(context.Background(), "/certs")
		t.Fatalf("Envoy never loaded the renewed client certificate %s: /certs:\n%s", serial, body)
	}
	pair, err := tls.X509KeyPair(renewed.Envoy.Cert, renewed.Envoy.Key)
	if err != nil {
		t.Fatal(err)
	}
	var seen *tls.ConnectionState
	creds := credentials.NewTLS(&tls.Config{RootCAs: trust, ServerName: "thaw-grpc.renewed", Certificates: []tls.Certificate{pair},
		VerifyConnection: func(cs tls.ConnectionState) error { seen = &cs; return nil }})
	if err := intruderADS(t, env.grpcAddr, creds); err != nil {
		t.Fatalf("ADS with the renewed client certificate: %v", err)
	}
	if seen == nil || !strings.Contains(strings.Join(seen.PeerCertificates[0].DNSNames, ","), "thaw-grpc.renewed") {
		t.Errorf("thaw did not present its renewed certificate")
	}
	env.waitServed(t, "hello.test", "backend=warm")
	env.noNACKs(t)
}
