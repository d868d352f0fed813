//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/thaw-dev/thaw/e2e/harness"
)

// workloadBin is the example workload `make build` produces.
func workloadBin(t testing.TB) string {
	t.Helper()
	return filepath.Join(harness.RepoRoot(), "bin", "workload")
}

// revisionYAML renders one revision of the local platform file running the
// example workload.
type revisionYAML struct {
	Name, Host   string
	StartupDelay time.Duration
	Latency      time.Duration
	Autoscaling  map[string]string
	// Protocol, when set, is the revision's protocol (and the workload's:
	// h2c serves gRPC, probed by TCP).
	Protocol string
	// Env adds variables to the workload's environment.
	Env map[string]string
	// Traffic, when set, is the revision's traffic map as YAML
	// ("{percent: 90, tag: canary}").
	Traffic string
}

func localConfig(t testing.TB, revs ...revisionYAML) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("revisions:\n")
	for _, r := range revs {
		fmt.Fprintf(&b, "  - name: %s\n    hosts: [%s]\n    command: [%q, --port, \"{port}\"]\n", r.Name, r.Host, workloadBin(t))
		fmt.Fprintf(&b, "    env:\n      BODY: hello from %s\n      STARTUP_DELAY: %s\n      LATENCY: %s\n", r.Name, r.StartupDelay, r.Latency)
		for k, v := range r.Env {
			fmt.Fprintf(&b, "      %s: %q\n", k, v)
		}
		if r.Protocol != "" {
			fmt.Fprintf(&b, "      PROTOCOL: %s\n    protocol: %s\n", r.Protocol, r.Protocol)
		}
		if r.Protocol == "h2c" {
			b.WriteString("    readiness:\n      tcp: true\n      period: 200ms\n    stopTimeout: 5s\n")
		} else {
			b.WriteString("    readiness:\n      path: /healthz\n      period: 1s\n    stopTimeout: 5s\n")
		}
		if r.Traffic != "" {
			fmt.Fprintf(&b, "    traffic: %s\n", r.Traffic)
		}
		if len(r.Autoscaling) > 0 {
			b.WriteString("    autoscaling:\n")
			for k, v := range r.Autoscaling {
				fmt.Fprintf(&b, "      %s: %q\n", k, v)
			}
		}
	}
	return b.String()
}

// client returns an HTTP client with enough connections for bursts.
func client(timeout time.Duration) *http.Client {
	return &http.Client{Timeout: timeout, Transport: &http.Transport{
		MaxIdleConns: 2000, MaxIdleConnsPerHost: 2000, MaxConnsPerHost: 0, IdleConnTimeout: 30 * time.Second,
	}}
}

// get sends GET / with the given Host through thaw's Envoy.
func get(ctx context.Context, c *http.Client, th *harness.Thaw, host, path string) (int, string, http.Header, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, th.HTTPURL+path, nil)
	if err != nil {
		return 0, "", nil, err
	}
	req.Host = host
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), resp.Header, err
}

// burst sends n concurrent requests and returns how many succeeded (200 with
// the expected body) and the failures' descriptions (at most 10).
func burst(ctx context.Context, c *http.Client, th *harness.Thaw, host, want string, n int) (int, []string) {
	var ok atomic.Int64
	var mu sync.Mutex
	var fails []string
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, body, _, err := get(ctx, c, th, host, "/")
			if err == nil && code == 200 && strings.Contains(body, want) {
				ok.Add(1)
				return
			}
			mu.Lock()
			if len(fails) < 10 {
				fails = append(fails, fmt.Sprintf("code=%d err=%v body=%.80q", code, err, body))
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	return int(ok.Load()), fails
}

// loadGen keeps `conc` requests in flight until stopped and counts results.
type loadGen struct {
	ok, failed atomic.Int64
	mu         sync.Mutex
	fails      []string
	cancel     context.CancelFunc
	wg         sync.WaitGroup
	// slowest is the longest successful request (ns) since the last
	// takeSlowest: logged, never asserted.
	slowest atomic.Int64
}

// takeSlowest returns the longest successful request since the previous
// call and starts over.
func (g *loadGen) takeSlowest() time.Duration { return time.Duration(g.slowest.Swap(0)) }

func startLoad(th *harness.Thaw, host, want string, conc int) *loadGen {
	ctx, cancel := context.WithCancel(context.Background())
	g := &loadGen{cancel: cancel}
	c := client(30 * time.Second)
	for i := 0; i < conc; i++ {
		g.wg.Add(1)
		go func() {
			defer g.wg.Done()
			for ctx.Err() == nil {
				start := time.Now()
				code, body, hdr, err := get(ctx, c, th, host, "/")
				if ctx.Err() != nil {
					return
				}
				if err == nil && code == 200 && strings.Contains(body, want) {
					g.ok.Add(1)
					for took := int64(time.Since(start)); ; {
						old := g.slowest.Load()
						if took <= old || g.slowest.CompareAndSwap(old, took) {
							break
						}
					}
					continue
				}
				g.failed.Add(1)
				g.mu.Lock()
				if len(g.fails) < 10 {
					g.fails = append(g.fails, fmt.Sprintf("%s code=%d err=%v body=%.80q headers=%v",
						time.Now().Format("15:04:05.000"), code, err, body, hdr))
				}
				g.mu.Unlock()
				time.Sleep(10 * time.Millisecond)
			}
		}()
	}
	return g
}

func (g *loadGen) stop() (ok, failed int64, fails []string) {
	g.cancel()
	g.wg.Wait()
	return g.ok.Load(), g.failed.Load(), g.fails
}

// waitStatus polls thaw's /status until cond holds for the revision, up to
// timeout; it returns the last row.
func waitStatus(t testing.TB, th *harness.Thaw, rev string, timeout time.Duration, what string, cond func(row map[string]any) bool) map[string]any {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var last map[string]any
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		rows, err := th.Status(ctx)
		cancel()
		if err == nil {
			last = rows[rev]
			if last != nil && cond(last) {
				return last
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("revision %s: %s not reached within %s; last status %v", rev, what, timeout, last)
	return nil
}

func num(row map[string]any, key string) float64 {
	f, _ := row[key].(float64)
	return f
}

// workloadStats is the example workload's /stats document.
type workloadStats struct {
	Pid       int   `json:"pid"`
	Port      int   `json:"port"`
	Started   int64 `json:"started_unix_nano"`
	Listening int64 `json:"listening_unix_nano"`
	Max       int64 `json:"max_inflight"`
}

func fetchWorkloadStats(ctx context.Context, c *http.Client, th *harness.Thaw, host string) (workloadStats, error) {
	code, body, _, err := get(ctx, c, th, host, "/stats")
	if err != nil || code != 200 {
		return workloadStats{}, fmt.Errorf("stats: %d %v %s", code, err, body)
	}
	var s workloadStats
	return s, json.Unmarshal([]byte(body), &s)
}

// envoyAdmin reads stats from an Envoy admin endpoint not started by the
// harness (the one thaw local runs).
type envoyAdmin struct{ url string }

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// clusterCount returns how many clusters Envoy has (admin /clusters, which
// the stats matcher does not filter).
func (e *envoyAdmin) clusterCount() (int64, error) {
	c := &http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(e.url + "/clusters?format=json")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var doc struct {
		ClusterStatuses []json.RawMessage `json:"cluster_statuses"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		return 0, err
	}
	return int64(len(doc.ClusterStatuses)), nil
}

// get returns the body of an admin GET.
func (e *envoyAdmin) get(path string) (string, error) {
	c := &http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(e.url + path)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// post sends an admin POST (e.g. /logging?upstream=debug); a status other
// than 200 is an error.
func (e *envoyAdmin) post(path string) error {
	c := &http.Client{Timeout: 2 * time.Second}
	resp, err := c.Post(e.url+path, "", nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("envoy admin POST %s: %s", path, resp.Status)
	}
	return nil
}

// writeConfig writes a thaw local config to path whole and renames it into
// place, as editors do, so a reload never reads half a file.
func writeConfig(t testing.TB, path, doc string) {
	t.Helper()
	if err := os.WriteFile(path+".tmp", []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		t.Fatal(err)
	}
}
