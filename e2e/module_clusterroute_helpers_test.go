//go:build e2e

package e2e

import (
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/thaw-dev/thaw/e2e/harness"
	"github.com/thaw-dev/thaw/module/state"
)

// needModuleSO points moduleSO at the module `make build` wrote
// (bin/thaw-activator.so) and fails the test when it is missing.
func needModuleSO(t *testing.T) {
	t.Helper()
	moduleSO = filepath.Join(harness.RepoRoot(), "bin", "thaw-activator.so")
	if _, err := os.Stat(moduleSO); err != nil {
		t.Fatalf("%s missing: run `make build` (%v)", moduleSO, err)
	}
}

// serveRejectingClusterHeader starts a loopback backend answering code
// with body "ok", after calling busy (nil: none) for each request. A
// request that still carries state.ClusterHeader gets 500 instead: thaw's
// routes remove the header (translate's request_headers_to_remove), so
// a backend never sees it. It returns the backend's host:port; the
// server closes with the test.
func serveRejectingClusterHeader(t *testing.T, code int, busy func()) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if busy != nil {
			busy()
		}
		if r.Header.Get(state.ClusterHeader) != "" {
			w.WriteHeader(http.StatusInternalServerError)
			io.WriteString(w, "got "+state.ClusterHeader)
			return
		}
		w.WriteHeader(code)
		io.WriteString(w, "ok")
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

// headerClusterRoute is moduleRoute for prefix on revision key, as a
// cluster route: the router takes the cluster from state.ClusterHeader
// (which the module overwrites with cluster), and the route removes the
// header before the request goes upstream.
func headerClusterRoute(prefix, cluster, key string) string {
	return strings.Replace(strings.Replace(moduleRoute(prefix, cluster, key),
		"route: {cluster: "+cluster+",", "request_headers_to_remove: ["+state.ClusterHeader+"]\nroute: {cluster_header: "+state.ClusterHeader+",", 1),
		`'{"revision":"`+key+`"}'`, `'{"revision":"`+key+`","cluster":"`+cluster+`"}'`, 1)
}
