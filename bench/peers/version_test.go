package peers

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestBinVersionAndCheckBinary(t *testing.T) {
	dir := t.TempDir()
	cached := filepath.Join(dir, "cache", "queue-proxy-v0.50.0", "queue-proxy")
	if err := os.MkdirAll(filepath.Dir(cached), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cached, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "bin", "queue-proxy")
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(cached, link); err != nil {
		t.Fatal(err)
	}
	if got := BinVersion(link, "queue-proxy"); got != "v0.50.0" {
		t.Errorf("BinVersion(link) = %q, want v0.50.0", got)
	}
	if got := BinVersion(link, "keda-interceptor"); got != "unknown" {
		t.Errorf("BinVersion under another name = %q, want unknown", got)
	}
	if got := BinVersion(filepath.Join(dir, "missing"), "queue-proxy"); got != "unknown" {
		t.Errorf("BinVersion(missing) = %q, want unknown", got)
	}
	if err := CheckBinary(link); err != nil {
		t.Errorf("CheckBinary(executable) = %v", err)
	}
	if err := CheckBinary(filepath.Join(dir, "missing")); err == nil || !strings.Contains(err.Error(), "make tools-peers") {
		t.Errorf("CheckBinary(missing) = %v, want an error naming make tools-peers", err)
	}
	plain := filepath.Join(dir, "plain")
	if err := os.WriteFile(plain, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := CheckBinary(plain); err == nil {
		t.Error("CheckBinary(not executable) = nil")
	}
}

func TestPeerEnvironments(t *testing.T) {
	q := strings.Join(QueueEnv(8012, 8112, 9000), "\n")
	for _, want := range []string{"QUEUE_SERVING_PORT=8012", "QUEUE_SERVING_TLS_PORT=8112", "USER_PORT=9000", "CONTAINER_CONCURRENCY=0"} {
		if !strings.Contains(q, want) {
			t.Errorf("QueueEnv lacks %s:\n%s", want, q)
		}
	}
	k := strings.Join(KedaEnv(8080, 9090, "/k/config"), "\n")
	for _, want := range []string{"KEDA_HTTP_PROXY_PORT=8080", "KEDA_HTTP_ADMIN_PORT=9090", "KEDA_HTTP_WATCH_NAMESPACE=" + KedaNamespace, "KUBECONFIG=/k/config"} {
		if !strings.Contains(k, want) {
			t.Errorf("KedaEnv lacks %s:\n%s", want, k)
		}
	}
}
