//go:build e2e

package e2e

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/thaw-dev/thaw/e2e/harness"
)

// TestEnvoyStaticProxy is the foundation smoke test: real Envoy with a static
// config proxies a request to a local HTTP server.
func TestEnvoyStaticProxy(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello from backend, host=%s", r.Host)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	backendPort := ln.Addr().(*net.TCPAddr).Port
	listenPort := harness.PickPort(t)

	harness.StartEnvoy(t, harness.EnvoyOptions{Bootstrap: harness.StaticBootstrap{
		Listeners: []harness.HTTPListener{{Name: "http", Port: listenPort,
			VirtualHosts: []string{harness.CatchAll("backend", "{cluster: backend}")}}},
		Clusters: []string{harness.StaticCluster("backend", backendPort)},
	}.String()})

	client := &http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get(fmt.Sprintf("http://127.0.0.1:%d/", listenPort))
	if err != nil {
		t.Fatalf("request through envoy: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || !strings.Contains(string(body), "hello from backend") {
		t.Fatalf("got %d %q, want 200 from the backend", resp.StatusCode, body)
	}
	if resp.Header.Get("server") != "envoy" {
		t.Errorf("server header = %q, want envoy (request did not pass through envoy?)", resp.Header.Get("server"))
	}
}
