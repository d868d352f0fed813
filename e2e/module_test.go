//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/thaw-dev/thaw/e2e/harness"
	"github.com/thaw-dev/thaw/module/state"
)

// moduleBackend is a loopback HTTP backend that records the most requests
// it ever had in flight; requests to /slow wait for release (or 10 s).
type moduleBackend struct {
	addr     string
	inFlight atomic.Int32
	max      atomic.Int32
	release  chan struct{}
}

func startModuleBackend(t *testing.T) *moduleBackend {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &moduleBackend{addr: ln.Addr().String(), release: make(chan struct{})}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := b.inFlight.Add(1)
		defer b.inFlight.Add(-1)
		for {
			m := b.max.Load()
			if n <= m || b.max.CompareAndSwap(m, n) {
				break
			}
		}
		if strings.HasSuffix(r.URL.Path, "/slow") {
			select {
			case <-b.release:
			case <-time.After(10 * time.Second):
			}
		} else {
			time.Sleep(20 * time.Millisecond)
		}
		fmt.Fprintf(w, "backend %s", b.addr)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return b
}

// stateFeed serves the module's state stream (one JSON update per line)
// and records reports, speaking the module's protocol (module/state).
type stateFeed struct {
	mu      sync.Mutex
	updates []string
	changed chan struct{}
	pokes   chan string
	reports atomic.Int32
	url     string
	held    sync.Map // revision -> last reported held count (int64)
	srv     *http.Server
}

func startStateFeed(t *testing.T) *stateFeed {
	t.Helper()
	f := &stateFeed{changed: make(chan struct{}), pokes: make(chan string, 100)}
	mux := http.NewServeMux()
	mux.HandleFunc("/state", func(w http.ResponseWriter, r *http.Request) {
		sent := 0
		for {
			f.mu.Lock()
			pending, ch := f.updates[sent:], f.changed
			f.mu.Unlock()
			for _, u := range pending {
				fmt.Fprintln(w, u)
				sent++
			}
			w.(http.Flusher).Flush()
			select {
			case <-ch:
			case <-r.Context().Done():
				return
			}
		}
	})
	mux.HandleFunc("/report", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		rep, err := state.DecodeReport(b)
		if err != nil {
			t.Errorf("module sent an invalid report: %v", err)
			return
		}
		f.reports.Add(1)
		for _, c := range rep.Revisions {
			f.held.Store(c.Key, c.Held)
		}
		for _, p := range rep.Pokes {
			f.pokes <- p
		}
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	f.srv = srv
	f.url = "http://" + ln.Addr().String()
	return f
}

func (f *stateFeed) send(t *testing.T, u state.Update) {
	t.Helper()
	b, err := json.Marshal(u)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := state.DecodeUpdate(b); err != nil {
		t.Fatalf("test sent an invalid update: %v", err)
	}
	f.mu.Lock()
	f.updates = append(f.updates, string(b))
	close(f.changed)
	f.changed = make(chan struct{})
	f.mu.Unlock()
}

// moduleRoute is a route (a YAML mapping for harness.VirtualHost) of path
// prefix to cluster, through the module for revision.
func moduleRoute(prefix, cluster, revision string) string {
	return fmt.Sprintf(`match: {prefix: "%s"}
route: {cluster: %s, timeout: 30s}
typed_per_filter_config:
  thaw_activator:
    "@type": type.googleapis.com/envoy.extensions.filters.http.dynamic_modules.v3.DynamicModuleFilterPerRoute
    dynamic_module_config: {module: {local: {filename: "%s"}}, do_not_close: true}
    filter_name: thaw_activator
    filter_config: {"@type": type.googleapis.com/google.protobuf.StringValue, value: '{"revision":"%s"}'}`,
		prefix, cluster, moduleSO, revision)
}

var moduleSO string

// staticCluster is a cluster (a YAML mapping for harness.StaticBootstrap)
// with one endpoint per address ("ip:port").
func staticCluster(name string, addrs ...string) string {
	var eps []string
	for _, a := range addrs {
		host, port, _ := net.SplitHostPort(a)
		eps = append(eps, fmt.Sprintf(`{endpoint: {address: {socket_address: {address: %s, port_value: %s}}}}`, host, port))
	}
	return fmt.Sprintf(`name: %s
type: STATIC
connect_timeout: 1s
load_assignment:
  cluster_name: %s
  endpoints: [{lb_endpoints: [%s]}]`, name, name, strings.Join(eps, ", "))
}

// TestModuleActivator: real Envoy 1.40 loads bin/thaw-activator.so (ABI
// matched), the module pins each request to a backend slot (a burst never
// exceeds a backend's slots), holds requests with no free slot and answers
// overflow and hold timeout with 503 + Retry-After, pokes at zero, and
// resumes held requests when state brings a backend.
func TestModuleActivator(t *testing.T) {
	needModuleSO(t)
	b1, b2, b3 := startModuleBackend(t), startModuleBackend(t), startModuleBackend(t)
	feed := startStateFeed(t)
	port := harness.PickPort(t)
	cfg := fmt.Sprintf(`{"stateURL":"%s/state","reportURL":"%s/report","node":"e2e","holdTimeoutMs":5000,"retryAfterSeconds":3,"reportIntervalMs":200}`, feed.url, feed.url)
	env := harness.StartEnvoy(t, harness.EnvoyOptions{LogLevel: "info", Bootstrap: moduleBootstrap(port,
		[]string{moduleRoute("/a", "rev_ns_a", "ns/a"), moduleRoute("/b", "rev_ns_b", "ns/b"), moduleRoute("/c", "rev_ns_c", "ns/c"), moduleRoute("/d", "rev_ns_d", "ns/d"), moduleRoute("/z", "rev_ns_a", "ns/z")},
		[]string{moduleFilter(moduleSO, cfg)},
		staticCluster("rev_ns_a", b1.addr, b2.addr), staticCluster("rev_ns_b", b3.addr), staticCluster("rev_ns_c", b3.addr), staticCluster("rev_ns_d", b3.addr))})

	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	client := &http.Client{Timeout: 40 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 1000}}
	get := func(path string) (int, string, http.Header) {
		resp, err := client.Get(base + path)
		if err != nil {
			return 0, err.Error(), nil
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), resp.Header
	}

	feed.send(t, state.Update{Full: true, Revisions: []state.RevisionUpdate{
		{Key: "ns/a", QueueDepth: 1000, HoldTimeoutMs: 10000, Backends: []state.BackendUpdate{{Addr: b1.addr, Slots: 2}, {Addr: b2.addr, Slots: 2}}},
		{Key: "ns/b", QueueDepth: 1, HoldTimeoutMs: 10000, Backends: []state.BackendUpdate{{Addr: b3.addr, Slots: 1}}},
		{Key: "ns/c", QueueDepth: 10, HoldTimeoutMs: 300},
		{Key: "ns/d", QueueDepth: 10, HoldTimeoutMs: 300},
		{Key: "ns/z", QueueDepth: 2000, HoldTimeoutMs: 30000},
	}})

	t.Run("burst never exceeds slots", func(t *testing.T) {
		const n = 60
		var wg sync.WaitGroup
		var bad atomic.Int32
		for i := 0; i < n; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if code, body, _ := get("/a"); code != 200 {
					bad.Add(1)
					t.Errorf("burst request: %d %s", code, body)
				}
			}()
		}
		wg.Wait()
		if m1, m2 := b1.max.Load(), b2.max.Load(); m1 > 2 || m2 > 2 || m1 == 0 || m2 == 0 {
			t.Fatalf("max in flight per backend %d and %d; want both in [1, 2] (slots 2 each)", m1, m2)
		}
	})

	t.Run("burst of 1000 from zero never exceeds slots", func(t *testing.T) {
		const n = 1000
		codes := make(chan int, n)
		for i := 0; i < n; i++ {
			go func() { code, _, _ := get("/z"); codes <- code }()
		}
		// Every request is held (the module reports them) before a backend
		// appears.
		waitFor(t, func() bool { v, ok := feed.held.Load("ns/z"); return ok && v.(int64) == n })
		feed.send(t, state.Update{Revisions: []state.RevisionUpdate{{Key: "ns/z", QueueDepth: 2000, HoldTimeoutMs: 30000,
			Backends: []state.BackendUpdate{{Addr: b1.addr, Slots: 2}, {Addr: b2.addr, Slots: 2}}}}})
		for i := 0; i < n; i++ {
			if c := <-codes; c != 200 {
				t.Fatalf("burst request got %d, want 200", c)
			}
		}
		if m1, m2 := b1.max.Load(), b2.max.Load(); m1 > 2 || m2 > 2 {
			t.Fatalf("max in flight per backend %d and %d; slots are 2 each", m1, m2)
		}
	})

	t.Run("overflow gets 503 with Retry-After", func(t *testing.T) {
		first := make(chan int, 1)
		go func() { code, _, _ := get("/b/slow"); first <- code }()
		waitFor(t, func() bool { return b3.inFlight.Load() == 1 })
		second := make(chan int, 1)
		go func() { code, _, _ := get("/b"); second <- code }()
		// The module reports the held request to thaw.
		waitFor(t, func() bool { v, ok := feed.held.Load("ns/b"); return ok && v.(int64) == 1 })
		code, body, h := get("/b")
		if code != 503 || !strings.Contains(body, "too many requests waiting") || h.Get("Retry-After") != "3" {
			t.Fatalf("request past queue depth 1: %d %q Retry-After %q; want the queue-full 503 with Retry-After 3", code, body, h.Get("Retry-After"))
		}
		close(b3.release)
		if c := <-first; c != 200 {
			t.Fatalf("slot holder got %d", c)
		}
		if c := <-second; c != 200 {
			t.Fatalf("held request got %d after the slot freed, want 200", c)
		}
	})

	t.Run("at zero: poke, hold timeout, resume on state", func(t *testing.T) {
		code, body, h := get("/c")
		if code != 503 || !strings.Contains(body, "did not become ready in time") || h.Get("Retry-After") != "3" {
			t.Fatalf("held request at zero: %d %q Retry-After %q; want the hold-timeout 503", code, body, h.Get("Retry-After"))
		}
		// Earlier pokes (ns/a's first requests may arrive before its state)
		// are skipped.
		for poked := false; !poked; {
			select {
			case k := <-feed.pokes:
				poked = k == "ns/c"
			case <-time.After(10 * time.Second):
				t.Fatal("no poke reached thaw for a request held at zero")
			}
		}
		res := make(chan int, 1)
		feed.send(t, state.Update{Revisions: []state.RevisionUpdate{{Key: "ns/c", QueueDepth: 10, HoldTimeoutMs: 20000}}})
		go func() { code, _, _ := get("/c"); res <- code }()
		waitFor(t, func() bool { return len(res) == 0 })
		feed.send(t, state.Update{Revisions: []state.RevisionUpdate{{Key: "ns/c", QueueDepth: 10, HoldTimeoutMs: 20000,
			Backends: []state.BackendUpdate{{Addr: b3.addr, Slots: 0}}}}})
		if c := <-res; c != 200 {
			t.Fatalf("held request got %d after a backend appeared, want 200", c)
		}
	})
	if feed.reports.Load() == 0 {
		t.Error("no count report reached thaw")
	}

	t.Run("gRPC request gets a gRPC-shaped hold timeout", func(t *testing.T) {
		tr := &http.Transport{Protocols: new(http.Protocols)}
		tr.Protocols.SetUnencryptedHTTP2(true)
		h2 := &http.Client{Transport: tr, Timeout: 20 * time.Second}
		req, err := http.NewRequest(http.MethodPost, base+"/d/pkg.Svc/Call", strings.NewReader("\x00\x00\x00\x00\x00"))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("content-type", "application/grpc")
		req.Header.Set("te", "trailers")
		resp, err := h2.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		st := resp.Header.Get("grpc-status")
		if st == "" {
			st = resp.Trailer.Get("grpc-status")
		}
		if resp.ProtoMajor != 2 || st != "14" {
			t.Fatalf("gRPC request held at zero: HTTP/%d %d grpc-status %q; want grpc-status 14 (UNAVAILABLE)", resp.ProtoMajor, resp.StatusCode, st)
		}
	})

	t.Run("thaw unreachable: last state kept", func(t *testing.T) {
		feed.srv.Close()
		for i := 0; i < 20; i++ {
			if code, body, _ := get("/a"); code != 200 {
				t.Fatalf("warm revision after thaw went away: %d %s", code, body)
			}
		}
		if m1, m2 := b1.max.Load(), b2.max.Load(); m1 > 2 || m2 > 2 {
			t.Fatalf("slots exceeded after thaw went away: %d, %d", m1, m2)
		}
	})
	// Envoy writes its log file every few seconds.
	for i := 0; ; i++ {
		logb, _ := os.ReadFile(env.LogPath)
		if strings.Contains(string(logb), "Dynamic module ABI version v0.2.0 matched") {
			break
		}
		if i == 150 {
			t.Fatal("Envoy never reported a matching dynamic-module ABI version (v0.2.0)")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitFor polls cond every 20 ms for up to 10 s.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for i := 0; i < 500; i++ {
		if cond() {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("condition not met within 10 s")
}

// moduleBootstrap is a static Envoy bootstrap: listener http on port with
// routes in one virtual host, filters (none: nil) before the router, and
// clusters; each item a YAML mapping (harness.StaticBootstrap).
func moduleBootstrap(port int, routes, filters []string, clusters ...string) string {
	return harness.StaticBootstrap{
		Listeners: []harness.HTTPListener{{Name: "http", Port: port,
			VirtualHosts: []string{harness.VirtualHost("revs", []string{"*"}, routes...)}, Filters: filters}},
		Clusters: clusters,
	}.String()
}

// moduleFilter is the thaw_activator dynamic-module HTTP filter (a YAML
// mapping) loading so with filter config cfg (JSON).
func moduleFilter(so, cfg string) string {
	return fmt.Sprintf(`name: thaw_activator
typed_config:
  "@type": type.googleapis.com/envoy.extensions.filters.http.dynamic_modules.v3.DynamicModuleFilter
  dynamic_module_config: {module: {local: {filename: "%s"}}, do_not_close: true}
  filter_name: thaw_activator
  filter_config: {"@type": type.googleapis.com/google.protobuf.StringValue, value: '%s'}`, so, cfg)
}
