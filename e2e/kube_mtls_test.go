//go:build e2e

package e2e

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/cert"

	"github.com/thaw-dev/thaw/e2e/harness"
	"github.com/thaw-dev/thaw/envoy"
	"github.com/thaw-dev/thaw/internal/certgen"
)

// kubeMutualTLS sets up mutual TLS the way manifests/ does: `thaw certgen`
// runs as the thaw-certgen ServiceAccount (the RBAC of manifests/) and
// writes the Secrets; a second run finds them current and writes nothing.
// The Secrets' data then stands in for the volumes: it returns thaw run's
// --tls-* flags and Envoy's side of the bootstrap.
func kubeMutualTLS(t *testing.T, env *kubeEnv) ([]string, *envoy.ClientTLS) {
	t.Helper()
	c := env.Cluster
	kubeconfig := c.KubeconfigForToken(t, c.ServiceAccountToken(t, thawNamespace, "thaw-certgen"))
	certgenRun := func() string {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
		defer cancel()
		out, err := exec.CommandContext(ctx, harness.ThawBinary(t), "certgen", "--kubeconfig", kubeconfig,
			"--namespace", thawNamespace).CombinedOutput()
		if err != nil {
			t.Fatalf("thaw certgen: %v\n%s", err, out)
		}
		return string(out)
	}
	certgenRun()
	secrets := c.Client.CoreV1().Secrets(thawNamespace)
	versions := map[string]string{}
	dirs := map[string]string{}
	for _, name := range []string{certgen.DefaultCASecret, certgen.DefaultServerSecret, certgen.DefaultEnvoySecret} {
		s, err := secrets.Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("Secret %s after certgen: %v", name, err)
		}
		versions[name] = s.ResourceVersion
		dir := filepath.Join(t.TempDir(), name)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{certgen.KeyCert, certgen.KeyKey, certgen.KeyCA} {
			if len(s.Data[k]) == 0 {
				t.Fatalf("Secret %s lacks %s", name, k)
			}
			if err := os.WriteFile(filepath.Join(dir, k), s.Data[k], 0o600); err != nil {
				t.Fatal(err)
			}
		}
		dirs[name] = dir
	}
	if out := certgenRun(); !strings.Contains(out, "up to date") {
		t.Errorf("second certgen run did not find the certificates current:\n%s", out)
	}
	for name, rv := range versions {
		if s, err := secrets.Get(t.Context(), name, metav1.GetOptions{}); err != nil || s.ResourceVersion != rv {
			t.Errorf("second certgen run rewrote Secret %s (%v)", name, err)
		}
	}
	srv := dirs[certgen.DefaultServerSecret]
	args := []string{"--tls-cert-file", filepath.Join(srv, "tls.crt"), "--tls-key-file", filepath.Join(srv, "tls.key"),
		"--tls-client-ca-file", filepath.Join(srv, "ca.crt")}
	return args, writeEnvoyTLS(t, dirs[certgen.DefaultEnvoySecret])
}

// checkIntrudersRefused asserts that clients without a client certificate
// (plaintext, or TLS trusting thaw's CA) get no ADS answer from thaw at
// grpcAddr.
func checkIntrudersRefused(t *testing.T, grpcAddr string, envoyTLS *envoy.ClientTLS) {
	t.Helper()
	ca, err := os.ReadFile(filepath.Join(envoyTLS.CertDir, certgen.KeyCA))
	if err != nil {
		t.Fatal(err)
	}
	pool, err := cert.NewPoolFromBytes(ca)
	if err != nil {
		t.Fatal(err)
	}
	for name, creds := range map[string]credentials.TransportCredentials{
		"plaintext": insecure.NewCredentials(),
		"TLS without a client certificate": credentials.NewTLS(&tls.Config{RootCAs: pool, ServerName: mtlsServerName,
			MinVersion: tls.VersionTLS12}),
	} {
		if err := intruderADS(t, grpcAddr, creds); err == nil {
			t.Errorf("%s: thaw run answered an ADS stream, want the connection refused", name)
		} else {
			t.Logf("%s: refused: %v", name, err)
		}
	}
}

// checkConnectedNodes asserts thaw's thaw_xds_connected_nodes gauge is want:
// refused clients never become xDS nodes.
func checkConnectedNodes(t *testing.T, adminURL string, want int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, adminURL+"/metrics", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	line := fmt.Sprintf("thaw_xds_connected_nodes %d\n", want)
	if !strings.Contains(string(b), line) {
		t.Errorf("/metrics lacks %q:\n%s", strings.TrimSpace(line), grepLines(string(b), "thaw_xds_connected_nodes"))
	}
	// The refused intruders are counted (two clients, gRPC may retry).
	var failures float64
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "thaw_grpc_tls_handshake_failures_total "); ok {
			failures, _ = strconv.ParseFloat(v, 64)
		}
	}
	if failures < 2 {
		t.Errorf("thaw_grpc_tls_handshake_failures_total = %v after two refused clients:\n%s", failures,
			grepLines(string(b), "thaw_grpc_tls"))
	}
}
