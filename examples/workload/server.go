package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// server answers requests and counts them. Counters are atomics: the
// handler is the hot path of every load test.
type server struct {
	cfg       config
	port      int
	pid       int
	started   time.Time
	listening time.Time

	inflight    atomic.Int64
	maxInflight atomic.Int64
	requests    atomic.Int64
	// stopping is closed when the server starts to drain: long-lived
	// connections (WebSocket, gRPC streams) end cleanly then.
	stopping chan struct{}
}

// Stats is the JSON document GET /stats returns.
type Stats struct {
	Pid         int   `json:"pid"`
	Port        int   `json:"port"`
	Inflight    int64 `json:"inflight"`
	MaxInflight int64 `json:"max_inflight"`
	Requests    int64 `json:"requests"`
	// Started and Listening are Unix times in nanoseconds: when the process
	// started and when it began accepting connections.
	Started   int64 `json:"started_unix_nano"`
	Listening int64 `json:"listening_unix_nano"`
}

func newServer(cfg config, port int, started, listening time.Time) *server {
	return &server{cfg: cfg, port: port, pid: os.Getpid(), started: started, listening: listening, stopping: make(chan struct{})}
}

// track counts one request (or WebSocket connection, or gRPC call) in
// flight until the returned func is called.
func (s *server) track() (done func()) {
	n := s.inflight.Add(1)
	for {
		m := s.maxInflight.Load()
		if n <= m || s.maxInflight.CompareAndSwap(m, n) {
			break
		}
	}
	s.requests.Add(1)
	return func() { s.inflight.Add(-1) }
}

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/healthz":
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprintln(w, "ok")
		return
	case "/stats":
		s.serveStats(w, r)
		return
	case WebSocketPath:
		s.serveWebSocket(w, r)
		return
	}
	defer s.track()()
	if r.URL.Path == "/stream" {
		s.serveStream(w, r)
		return
	}
	s.serveWork(w, r)
}

// serveWork is the workload response after the latency.
func (s *server) serveWork(w http.ResponseWriter, r *http.Request) {
	latency := s.cfg.latency
	if v := r.URL.Query().Get("latency"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			http.Error(w, "latency: want a duration such as 100ms", http.StatusBadRequest)
			return
		}
		latency = d
	}
	if latency > 0 {
		t := time.NewTimer(latency)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			return
		}
	}
	w.Header().Set("Content-Type", "text/plain")
	if name := r.URL.Query().Get("echo"); name != "" {
		vs := r.Header.Values(name)
		w.Header().Set("X-Workload-Echo-Count", strconv.Itoa(len(vs)))
		w.Header().Set("X-Workload-Echo", strings.Join(vs, ","))
	}
	w.Header().Set("X-Workload-Port", strconv.Itoa(s.port))
	w.Header().Set("X-Workload-Pid", strconv.Itoa(s.pid))
	fmt.Fprintf(w, "%s\nport=%d pid=%d\n", s.cfg.body, s.port, s.pid)
}

func (s *server) serveStats(w http.ResponseWriter, r *http.Request) {
	st := Stats{
		Pid:         s.pid,
		Port:        s.port,
		Inflight:    s.inflight.Load(),
		MaxInflight: s.maxInflight.Load(),
		Requests:    s.requests.Load(),
		Started:     s.started.UnixNano(),
		Listening:   s.listening.UnixNano(),
	}
	if r.URL.Query().Get("reset") != "" {
		s.maxInflight.Store(s.inflight.Load())
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(st)
}
