package app

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
)

func TestAdminServer(t *testing.T) {
	reg := prometheus.NewRegistry()
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "thaw_test_total", Help: "test"})
	reg.MustRegister(c)
	c.Inc()
	var ready atomic.Bool
	rows := []RevisionStatus{{Revision: "ns/a", Mode: "serve", Desired: 2, Ready: 2, RPS: 3.5}}
	a, err := NewAdminServer("127.0.0.1:0", reg, fakeStatus(rows), ready.Load, false)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { a.Run(ctx, zap.NewNop()); close(done) }()
	defer func() { cancel(); <-done }()

	get := func(path string) (int, string) {
		t.Helper()
		cl := &http.Client{Timeout: 5 * time.Second}
		resp, err := cl.Get("http://" + a.Addr() + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, _ := get("/readyz"); code != http.StatusServiceUnavailable {
		t.Errorf("/readyz before ready = %d, want 503", code)
	}
	ready.Store(true)
	if code, _ := get("/readyz"); code != http.StatusOK {
		t.Errorf("/readyz when ready = %d, want 200", code)
	}
	if code, body := get("/metrics"); code != 200 || !strings.Contains(body, "thaw_test_total 1") {
		t.Errorf("/metrics = %d %q", code, body)
	}
	code, body := get("/status")
	if code != 200 {
		t.Fatalf("/status = %d", code)
	}
	got, err := DecodeStatus(strings.NewReader(body))
	if err != nil || len(got) != 1 || got[0] != rows[0] {
		t.Errorf("/status decoded = %+v, %v; want %+v", got, err, rows)
	}
}

func TestAdminPprof(t *testing.T) {
	for _, on := range []bool{false, true} {
		a, err := NewAdminServer("127.0.0.1:0", prometheus.NewRegistry(), fakeStatus(nil), func() bool { return true }, on)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { a.Run(ctx, zap.NewNop()); close(done) }()
		resp, err := (&http.Client{Timeout: 5 * time.Second}).Get("http://" + a.Addr() + "/debug/pprof/")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if want := map[bool]int{false: http.StatusNotFound, true: http.StatusOK}[on]; resp.StatusCode != want {
			t.Errorf("pprof %v: /debug/pprof/ = %d, want %d", on, resp.StatusCode, want)
		}
		cancel()
		<-done
	}
	for addr, want := range map[string]bool{"127.0.0.1:9901": true, "[::1]:1": true, "localhost:1": true,
		"0.0.0.0:9901": false, "10.1.2.3:9901": false, ":9901": false, "bad": false} {
		if got := IsLoopbackAddress(addr); got != want {
			t.Errorf("IsLoopbackAddress(%q) = %v, want %v", addr, got, want)
		}
	}
}

func TestWriteStatusTable(t *testing.T) {
	var b bytes.Buffer
	err := WriteStatusTable(&b, []RevisionStatus{
		{Revision: "ns/b", Mode: "invalid", Desired: -1, Error: "target: value \"x\" not allowed"},
		{Revision: "ns/a", Mode: "proxy", Desired: 0, Held: 7},
	})
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "REVISION") {
		t.Fatalf("table:\n%s", b.String())
	}
	if !strings.HasPrefix(lines[1], "ns/a") || !strings.Contains(lines[1], "0/0") {
		t.Errorf("rows not sorted or desired/ready wrong:\n%s", b.String())
	}
	if !strings.Contains(lines[2], "-/0") || !strings.Contains(lines[2], "not allowed") {
		t.Errorf("invalid row lacks '-' desired or its error:\n%s", b.String())
	}
}
