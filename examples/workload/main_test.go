package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestParseConfig(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		want    config
		wantErr bool
	}{
		{"defaults", nil, nil, config{address: "127.0.0.1", port: 8080, body: "hello", drainTimeout: 30 * time.Second, protocol: "http1"}, false},
		{"env", nil, map[string]string{"PORT": "9000", "STARTUP_DELAY": "1s", "LATENCY": "5ms", "BODY": "hi"},
			config{address: "127.0.0.1", port: 9000, startupDelay: time.Second, latency: 5 * time.Millisecond, body: "hi", drainTimeout: 30 * time.Second, protocol: "http1"}, false},
		{"flags win", []string{"--port", "9001", "--latency", "1ms", "--body", "flag"}, map[string]string{"PORT": "9000", "LATENCY": "5ms", "BODY": "env"},
			config{address: "127.0.0.1", port: 9001, latency: time.Millisecond, body: "flag", drainTimeout: 30 * time.Second, protocol: "http1"}, false},
		{"bad env", nil, map[string]string{"LATENCY": "soon"}, config{}, true},
		{"bad port", []string{"--port", "70000"}, nil, config{}, true},
		{"h2c", nil, map[string]string{"PROTOCOL": "h2c"}, config{address: "127.0.0.1", port: 8080, body: "hello", drainTimeout: 30 * time.Second, protocol: "h2c"}, false},
		{"bad protocol", []string{"--protocol", "h3"}, nil, config{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseConfig(tt.args, func(k string) string { return tt.env[k] })
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if !tt.wantErr && got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

// TestMaxInflight holds n requests in flight, checks /stats counts them,
// and checks a plain answer names the instance.
func TestMaxInflight(t *testing.T) {
	const n = 8
	s := newServer(config{body: "hi", latency: time.Hour}, 1234, time.Now(), time.Now())
	ts := httptest.NewServer(s)
	defer ts.Close()

	resp, err := http.Get(ts.URL + "/?latency=0s")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if want := fmt.Sprintf("hi\nport=1234 pid=%d\n", s.pid); string(body) != want {
		t.Errorf("body %q, want %q", body, want)
	}
	if got := resp.Header.Get("X-Workload-Port"); got != "1234" {
		t.Errorf("X-Workload-Port = %q, want 1234", got)
	}

	// n requests that last until cancelled (latency 1h).
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, ts.URL+"/", nil)
			if resp, err := http.DefaultClient.Do(req); err == nil {
				resp.Body.Close()
			}
		}()
	}
	deadline := time.Now().Add(10 * time.Second)
	for stats(t, ts.URL).Inflight < n {
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("in flight never reached %d", n)
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	wg.Wait()
	for stats(t, ts.URL).Inflight != 0 {
		if time.Now().After(deadline) {
			t.Fatal("cancelled requests still in flight")
		}
		time.Sleep(5 * time.Millisecond)
	}
	st := stats(t, ts.URL+"/stats?reset=1")
	if st.MaxInflight != n || st.Requests != n+1 {
		t.Errorf("stats = %+v, want max %d and %d requests", st, n, n+1)
	}
	if st := stats(t, ts.URL); st.MaxInflight != 0 {
		t.Errorf("after reset max_inflight = %d, want 0", st.MaxInflight)
	}
}

func stats(t *testing.T, url string) Stats {
	t.Helper()
	if !strings.Contains(url, "/stats") {
		url += "/stats"
	}
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st Stats
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	return st
}

// TestGracefulShutdown: after the context ends (SIGTERM in main) a request
// in flight still completes, and run returns nil.
func TestGracefulShutdown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg := config{address: "127.0.0.1", port: port, body: "bye", drainTimeout: 10 * time.Second}
	done := make(chan error, 1)
	go func() { done <- run(ctx, cfg) }()

	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get(base + "/healthz")
		if err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("workload never listened: %v", err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	type result struct {
		body string
		err  error
	}
	res := make(chan result, 1)
	go func() {
		resp, err := http.Get(base + "/?latency=2s")
		if err != nil {
			res <- result{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		res <- result{string(b), err}
	}()
	for stats(t, base).Inflight < 1 {
		if time.Now().After(deadline) {
			t.Fatal("request never in flight")
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	r := <-res
	if r.err != nil || !strings.HasPrefix(r.body, "bye\n") {
		t.Errorf("in-flight request: %q, %v; want it answered", r.body, r.err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("run: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("run did not return")
	}
}

// TestStream: /stream sends its headers at once, then every event, then the
// end marker, and counts as one request in flight meanwhile.
func TestStream(t *testing.T) {
	s := newServer(config{body: "hi"}, 1234, time.Now(), time.Now())
	ts := httptest.NewServer(s)
	defer ts.Close()

	resp, err := http.Get(ts.URL + "/stream?events=3&interval=1ms")
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" || resp.Header.Get("X-Workload-Port") != "1234" {
		t.Fatalf("status %d, headers %v", resp.StatusCode, resp.Header)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	want := "data: 1 of 3 port=1234\n\ndata: 2 of 3 port=1234\n\ndata: 3 of 3 port=1234\n\nevent: end\ndata: done\n\n"
	if string(body) != want {
		t.Errorf("body %q, want %q", body, want)
	}
	if got := s.requests.Load(); got != 1 {
		t.Errorf("requests = %d, want 1", got)
	}

	for _, q := range []string{"events=-1", "events=x", "interval=soon", "interval=-1s"} {
		resp, err := http.Get(ts.URL + "/stream?" + q)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("/stream?%s: status %d, want 400", q, resp.StatusCode)
		}
	}
}

// TestEcho: ?echo=NAME reports how many values the request's header NAME
// had and what they were; without it the answer has no echo headers.
func TestEcho(t *testing.T) {
	s := newServer(config{body: "hi"}, 1234, time.Now(), time.Now())
	ts := httptest.NewServer(s)
	defer ts.Close()
	for _, tc := range []struct {
		query, count, values string
		sent                 []string
	}{
		{query: "?echo=x-probe", count: "0"},
		{query: "?echo=x-probe", count: "1", values: "a", sent: []string{"a"}},
		{query: "?echo=X-Probe", count: "2", values: "a,b", sent: []string{"a", "b"}},
		{query: "", sent: []string{"a"}},
	} {
		req, _ := http.NewRequest(http.MethodGet, ts.URL+"/"+tc.query, nil)
		for _, v := range tc.sent {
			req.Header.Add("x-probe", v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got := resp.Header.Get("X-Workload-Echo-Count"); got != tc.count {
			t.Errorf("%q with %v: X-Workload-Echo-Count = %q, want %q", tc.query, tc.sent, got, tc.count)
		}
		if got := resp.Header.Get("X-Workload-Echo"); got != tc.values {
			t.Errorf("%q with %v: X-Workload-Echo = %q, want %q", tc.query, tc.sent, got, tc.values)
		}
	}
}
