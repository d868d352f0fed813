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

	harness.StartEnvoy(t, harness.EnvoyOptions{Bootstrap: fmt.Sprintf(`
static_resources:
  listeners:
  - name: http
    address: {socket_address: {address: 127.0.0.1, port_value: %d}}
    filter_chains:
    - filters:
      - name: envoy.filters.network.http_connection_manager
        typed_config:
          "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
          stat_prefix: http
          route_config:
            virtual_hosts:
            - name: backend
              domains: ["*"]
              routes: [{match: {prefix: "/"}, route: {cluster: backend}}]
          http_filters:
          - name: envoy.filters.http.router
            typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}
  clusters:
  - name: backend
    type: STATIC
    load_assignment:
      cluster_name: backend
      endpoints: [{lb_endpoints: [{endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: %d}}}}]}]
`, listenPort, backendPort)})

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
