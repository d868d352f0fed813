package app

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/thaw-dev/thaw/activator"
	"github.com/thaw-dev/thaw/revision"
	"github.com/thaw-dev/thaw/xds/translate"
)

// BenchmarkStatusHandler: the admin /status at 10,000 revisions, whole
// and for one revision (?revision=), through the handler thaw serves.
// The ratio all/one is what a poller of one revision saves thaw.
func BenchmarkStatusHandler(b *testing.B) {
	const n = 10_000
	reg := revision.NewRegistry(revision.RegistryOptions{})
	for i := range n {
		s := revision.DefaultSpec()
		s.Hosts = []string{fmt.Sprintf("r%d.localhost", i)}
		reg.Upsert(revision.Key{Namespace: "local", Name: fmt.Sprintf("r%d", i)}, s)
	}
	a, err := New(Options{Registry: reg, GRPCAddress: "127.0.0.1:0", AdminAddress: "127.0.0.1:0",
		XDS: translate.DefaultConfig(),
		NewPlatform: func(*activator.Activator, prometheus.Registerer) (Platform, error) {
			return erroringPlatform{}, nil
		}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { a.grpcLn.Close(); a.admin.ln.Close() })
	h := statusHandler(a)
	for _, tc := range []struct{ name, query string }{
		{"all", ""},
		{"one", "?revision=local/r4242"},
	} {
		b.Run(fmt.Sprintf("%s/revisions=%d", tc.name, n), func(b *testing.B) {
			req := httptest.NewRequest(http.MethodGet, "/status"+tc.query, nil)
			for b.Loop() {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK {
					b.Fatalf("code %d: %s", rec.Code, rec.Body)
				}
			}
		})
	}
}
