//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/thaw-dev/thaw/e2e/harness"
)

// egMemoryRoutes is how many HTTPRoutes BenchmarkEnvoyGatewayRevisionMemory
// adds, each to a backend of its own.
const egMemoryRoutes = 1000

// BenchmarkEnvoyGatewayRevisionMemory measures the memory EG's Envoy spends
// per Revision (one cluster and one non-ADS delta EDS stream to thaw each)
// against the same routes to EG's own Backend resources (endpoints over
// EG's ADS). EG starts with one Revision (hello); 1000 HTTPRoutes, each to
// a backend of its own, are then added to EG's input. Once all their
// clusters are active (and, for Revisions, every one accepted an
// assignment from thaw: at zero, the activator endpoint), Envoy's resident
// memory and heap are read again. One measurement per sub-benchmark,
// whatever b.N; run it with
//
//	go test -tags e2e -run '^$' -bench EnvoyGatewayRevisionMemory -benchtime 1x -timeout 30m ./e2e/
//
// Reported: Envoy's RSS and allocated heap before and after (MiB), and the
// difference per route (KiB).
func BenchmarkEnvoyGatewayRevisionMemory(b *testing.B) {
	b.Run("revisions", func(b *testing.B) {
		revs := []revisionYAML{{Name: "hello", Host: "hello.localhost"}}
		var docs strings.Builder
		for i := range egMemoryRoutes {
			name := fmt.Sprintf("r%d", i)
			revs = append(revs, revisionYAML{Name: name, Host: name + ".localhost"})
			docs.WriteString(egRevisionRoute(name))
		}
		measureEGRoutes(b, revs, docs.String(), egMemoryRoutes+1)
	})
	b.Run("backends", func(b *testing.B) {
		var docs strings.Builder
		for i := range egMemoryRoutes {
			docs.WriteString("---\n" + strings.ReplaceAll(egBackendRoute, "NAME", fmt.Sprintf("b%d", i)))
		}
		measureEGRoutes(b, []revisionYAML{{Name: "hello", Host: "hello.localhost"}}, docs.String(), 1)
	})
}

// measureEGRoutes starts EG and thaw with revs, reads Envoy's memory, adds
// docs (egMemoryRoutes routes) to EG's input, waits until as many more
// clusters are active and wantAssigned Revision clusters have an
// assignment, and reports the memory metrics.
func measureEGRoutes(b *testing.B, revs []revisionYAML, docs string, wantAssigned int) {
	env := startEGWith(b, "", revs...)
	waitGateway(b, client(60*time.Second), env, 180*time.Second)
	admin := env.envoyAdmin(b)
	if n := egAssignedClusters(b, admin); n != 1 {
		b.Fatalf("%d Revision clusters with an assignment before, want 1 (hello)", n)
	}
	time.Sleep(5 * time.Second) // let Envoy settle after its first configuration
	active := envoyGauge(b, admin, "cluster_manager.active_clusters")
	rssBefore, heapBefore := env.envoyMemory(b, admin)

	addEGFile(b, env, "many.yaml", docs)
	deadline := time.Now().Add(10 * time.Minute)
	var n, a, w int64
	for i := 0; i < 600 && time.Now().Before(deadline); i++ {
		n = int64(egAssignedClusters(b, admin))
		a = envoyGauge(b, admin, "cluster_manager.active_clusters")
		w = envoyGauge(b, admin, "cluster_manager.warming_clusters")
		if n == int64(wantAssigned) && a >= active+egMemoryRoutes && w == 0 {
			break
		}
		time.Sleep(time.Second)
	}
	if n != int64(wantAssigned) || a < active+egMemoryRoutes || w != 0 {
		b.Fatalf("after 10 min: %d Revision clusters assigned (want %d), %d active clusters (want >= %d), %d warming",
			n, wantAssigned, a, active+egMemoryRoutes, w)
	}
	time.Sleep(5 * time.Second)
	rssAfter, heapAfter := env.envoyMemory(b, admin)

	b.ReportMetric(mibOf(rssBefore), "rss-before-MiB")
	b.ReportMetric(mibOf(rssAfter), "rss-after-MiB")
	b.ReportMetric(mibOf(heapBefore), "heap-before-MiB")
	b.ReportMetric(mibOf(heapAfter), "heap-after-MiB")
	b.ReportMetric(float64(rssAfter-rssBefore)/1024/egMemoryRoutes, "rss-KiB/route")
	b.ReportMetric(float64(heapAfter-heapBefore)/1024/egMemoryRoutes, "heap-KiB/route")
}

// egBackendRoute is an EG Backend NAME (a static loopback endpoint nobody
// calls) and an HTTPRoute for host NAME.localhost to it.
const egBackendRoute = `apiVersion: gateway.envoyproxy.io/v1alpha1
kind: Backend
metadata: {name: NAME, namespace: local}
spec:
  endpoints: [{ip: {address: 127.0.0.1, port: 9}}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: NAME, namespace: local}
spec:
  parentRefs: [{name: eg}]
  hostnames: [NAME.localhost]
  rules:
  - backendRefs: [{group: gateway.envoyproxy.io, kind: Backend, name: NAME}]
`

// envoyGauge returns one stat of EG's Envoy.
func envoyGauge(t testing.TB, admin, name string) int64 {
	t.Helper()
	body := envoyAdminGet(t, admin+"/stats?filter="+url.QueryEscape("^"+regexp.QuoteMeta(name)+"$"))
	_, v, ok := strings.Cut(strings.TrimSpace(body), ": ")
	if !ok {
		t.Fatalf("Envoy stat %s: %q", name, body)
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil {
		t.Fatalf("Envoy stat %s: %v", name, err)
	}
	return n
}

func mibOf(v int64) float64 { return float64(v) / (1 << 20) }

// envoyAdmin returns the admin URL of the Envoy EG started (func-e writes
// its address into <runtime dir>/<run>/admin-address.txt), waiting for it
// up to 60 s.
func (e *egEnv) envoyAdmin(t testing.TB) string {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for i := 0; i < 600 && time.Now().Before(deadline); i++ {
		if admin, err := harness.EGEnvoyAdmin(e.runDir); err == nil {
			return admin
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("no admin address of EG's Envoy under %s", e.runDir)
	return ""
}

// envoyMemory returns the resident set of EG's only Envoy (VmRSS) and the
// heap its allocator reports in use (admin /memory "allocated"), in bytes.
func (e *egEnv) envoyMemory(t testing.TB, admin string) (rss, heap int64) {
	t.Helper()
	pids := e.envoyPids()
	if len(pids) != 1 {
		t.Fatalf("%d Envoy processes started by EG, want 1", len(pids))
	}
	rss, err := harness.RSS(pids[0])
	if err != nil {
		t.Fatal(err)
	}
	body := envoyAdminGet(t, admin+"/memory")
	m := regexp.MustCompile(`"allocated":\s*"(\d+)"`).FindStringSubmatch(body)
	if m == nil || rss == 0 {
		t.Fatalf("Envoy memory: rss %d, /memory %q", rss, body)
	}
	heap, _ = strconv.ParseInt(m[1], 10, 64)
	return rss, heap
}

// egAssignedClusters counts the Revision clusters (stats prefix rev_local_)
// of EG's Envoy that accepted at least one EDS update from thaw.
func egAssignedClusters(t testing.TB, admin string) int {
	t.Helper()
	body := envoyAdminGet(t, admin+"/stats?filter="+url.QueryEscape(`^cluster\.rev_local_[a-z0-9]+\.update_success$`))
	n := 0
	for _, line := range strings.Split(body, "\n") {
		_, v, ok := strings.Cut(line, ": ")
		if !ok {
			continue
		}
		if c, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && c > 0 {
			n++
		}
	}
	return n
}

func envoyAdminGet(t testing.TB, url string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("Envoy admin: %v", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("Envoy admin %s: %d %v", url, resp.StatusCode, err)
	}
	return string(b)
}
