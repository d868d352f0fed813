package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/thaw-dev/thaw/envoy"
	"github.com/thaw-dev/thaw/internal/tlsreload"
)

// TestCertgenFilesAndTLSBootstrap runs `thaw certgen --output-dir` twice
// (the second run writes nothing), serves its server files through
// grpcTLS, and renders an Envoy bootstrap for its Envoy files.
func TestCertgenFilesAndTLSBootstrap(t *testing.T) {
	dir := t.TempDir()
	for i := 0; i < 2; i++ {
		cmd := newCertgenCmd(&globalFlags{})
		cmd.SetArgs([]string{"--output-dir", dir, "--server-dns-names", "localhost", "--server-ips", "127.0.0.1"})
		if err := cmd.Execute(); err != nil {
			t.Fatalf("certgen run %d: %v", i+1, err)
		}
	}
	srv := filepath.Join(dir, "thaw-server-tls")
	files := tlsreload.Files{CertFile: filepath.Join(srv, "tls.crt"), KeyFile: filepath.Join(srv, "tls.key"),
		ClientCAFile: filepath.Join(srv, "ca.crt")}
	if opts, cs, err := grpcTLS(zap.NewNop(), "127.0.0.1:0", files); err != nil || len(opts) != 1 || len(cs) != 2 {
		t.Fatalf("grpcTLS with certgen's files: %d options, %d collectors, %v", len(opts), len(cs), err)
	}
	if _, _, err := grpcTLS(zap.NewNop(), "127.0.0.1:0", tlsreload.Files{CertFile: files.CertFile}); !errors.Is(err, tlsreload.ErrInvalidFiles) {
		t.Errorf("grpcTLS with only a certificate: %v, want ErrInvalidFiles", err)
	}
	if opts, _, err := grpcTLS(zap.NewNop(), "127.0.0.1:0", tlsreload.Files{}); err != nil || len(opts) != 0 {
		t.Errorf("grpcTLS without files: %d options, %v; want plaintext", len(opts), err)
	}

	envoyDir := filepath.Join(dir, "thaw-envoy-tls")
	cmd := newEnvoyBootstrapCmd()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"--node-id", "e", "--xds-address", "127.0.0.1:18000", "--tls-cert-dir", envoyDir, "--tls-server-name", "localhost"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if err := envoy.Validate(out.Bytes()); err != nil || !strings.Contains(out.String(), "UpstreamTlsContext") {
		t.Fatalf("TLS bootstrap: %v\n%s", err, out.String())
	}
	for _, f := range []string{envoy.ClientCertSDSFile, envoy.TrustSDSFile} {
		b, err := os.ReadFile(filepath.Join(envoyDir, f))
		if err != nil || !strings.Contains(string(b), envoyDir) {
			t.Errorf("SDS file %s: %v\n%s", f, err, b)
		}
	}
}
