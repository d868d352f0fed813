package kube

import (
	"os"
	"path/filepath"
	"testing"
)

func TestLoadRESTConfig(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "kubeconfig")
	kc := `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: secret}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`
	if err := os.WriteFile(path, []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := LoadRESTConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Host != "https://127.0.0.1:6443" || cfg.BearerToken != "secret" || cfg.QPS != 50 || cfg.UserAgent != "thaw" {
		t.Errorf("config %+v", cfg)
	}
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	t.Setenv("KUBECONFIG", path)
	if cfg, err := LoadRESTConfig(""); err != nil || cfg.Host != "https://127.0.0.1:6443" {
		t.Errorf("from $KUBECONFIG: %v %v", cfg, err)
	}
	if _, err := LoadRESTConfig(filepath.Join(dir, "missing")); err == nil {
		t.Error("missing kubeconfig accepted")
	}
}

func TestDefaults(t *testing.T) {
	t.Setenv("POD_NAME", "thaw-7c9-abc")
	t.Setenv("POD_NAMESPACE", "ops")
	if DefaultIdentity() != "thaw-7c9-abc" || DefaultLeaseNamespace() != "ops" {
		t.Errorf("identity %q namespace %q", DefaultIdentity(), DefaultLeaseNamespace())
	}
	t.Setenv("POD_NAME", "")
	t.Setenv("POD_NAMESPACE", "")
	if DefaultIdentity() == "" {
		t.Error("empty identity")
	}
	if _, err := os.Stat(serviceAccountNamespaceFile); err != nil && DefaultLeaseNamespace() != DefaultNamespace {
		t.Errorf("namespace %q, want %q", DefaultLeaseNamespace(), DefaultNamespace)
	}
}
