//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/thaw-dev/thaw/e2e/harness"
)

// abruptExit makes the workload exit 1 ms after SIGTERM, cutting whatever
// it still serves: only thaw's drain can keep a stream whole.
var abruptExit = map[string]string{"DRAIN_TIMEOUT": "1ms"}

// sseStream is a server-sent events response through thaw's Envoy, read in
// the background.
type sseStream struct {
	port, pid int
	cancel    context.CancelFunc
	// done is closed when the body ended; complete and err are set then.
	done     chan struct{}
	complete bool
	err      error
}

// openSSE sends GET /stream?query to host through Envoy and returns once
// the first event arrived; the rest is read in the background.
func openSSE(t *testing.T, th *harness.Thaw, host, query string) *sseStream {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, th.HTTPURL+"/stream?"+query, nil)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	req.Host = host
	resp, err := (&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}).Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		cancel()
		t.Fatalf("stream %s: %v %v", host, resp, err)
	}
	s := &sseStream{cancel: cancel, done: make(chan struct{})}
	s.port, _ = strconv.Atoi(resp.Header.Get("X-Workload-Port"))
	s.pid, _ = strconv.Atoi(resp.Header.Get("X-Workload-Pid"))
	br := bufio.NewReader(resp.Body)
	if line, err := br.ReadString('\n'); err != nil || !strings.HasPrefix(line, "data: 1 of") {
		cancel()
		t.Fatalf("first event of %s: %q %v", host, line, err)
	}
	go func() {
		defer close(s.done)
		defer resp.Body.Close()
		rest, err := io.ReadAll(br)
		s.err = err
		s.complete = strings.HasSuffix(string(rest), "event: end\ndata: done\n\n")
	}()
	t.Cleanup(cancel)
	return s
}

func (s *sseStream) ended() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// wait waits for the end of the stream, bounded by its context.
func (s *sseStream) wait() { <-s.done }

func processAlive(pid int) bool { return syscall.Kill(pid, 0) == nil }

func waitProcessGone(t *testing.T, pid int, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for processAlive(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("process %d still running after %s", pid, timeout)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestLocalStreamAcrossScaleDownRPS: with metric rps, one long server-sent
// events stream is about zero requests per second, so the revision scales
// to zero while it streams. The stream still completes whole (the process
// would cut it on SIGTERM: thaw waits until nothing is in flight on it),
// and the process stops soon after it although Envoy may keep an idle
// connection to it. Two paths: the stream released by the activator (the
// default target burst capacity keeps a one-process revision in proxy
// mode), and the stream routed by Envoy straight to the process (serve
// mode), which the activator knows nothing about.
func TestLocalStreamAcrossScaleDownRPS(t *testing.T) {
	for _, tc := range []struct {
		name string
		tbc  string // target-burst-capacity; "" = default
		mode string // the mode the stream starts in
	}{
		{"activator path", "", "proxy"},
		{"serve mode", "0", "serve"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			as := map[string]string{"metric": "rps", "target": "10"}
			if tc.tbc != "" {
				as["target-burst-capacity"] = tc.tbc
			}
			th := harness.StartThaw(t, harness.ThawOptions{Config: localConfig(t, revisionYAML{
				Name: "sse", Host: "sse.test", Env: abruptExit, Autoscaling: fast(as),
			})})
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if code, body, _, err := get(ctx, client(30*time.Second), th, "sse.test", "/"); err != nil || code != 200 {
				t.Fatalf("wake-up request: %d %v %q", code, err, body)
			}
			waitStatus(t, th, "local/sse", 30*time.Second, tc.mode+" mode with 1 ready backend", func(r map[string]any) bool {
				return r["mode"] == tc.mode && num(r, "ready") == 1
			})
			s := openSSE(t, th, "sse.test", "events=60&interval=500ms")
			waitStatus(t, th, "local/sse", 28*time.Second, "scaled to zero while streaming", func(r map[string]any) bool {
				return num(r, "desired") == 0 && num(r, "ready") == 0
			})
			if s.ended() {
				t.Fatalf("the 30 s stream ended before the revision scaled to zero (complete=%v, err=%v): nothing was tested", s.complete, s.err)
			}
			if !processAlive(s.pid) {
				t.Fatalf("process %d serving the stream was stopped while the stream runs", s.pid)
			}
			s.wait()
			if s.err != nil || !s.complete {
				t.Fatalf("stream across the scale-down: complete=%v err=%v; want it whole", s.complete, s.err)
			}
			waitProcessGone(t, s.pid, 30*time.Second)
			log := th.Log()
			for _, bad := range []string{"drain timeout reached", "stopping anyway"} {
				if strings.Contains(log, bad) {
					t.Errorf("thaw log has %q", bad)
				}
			}
		})
	}
}

// TestLocalScaleDownStopsIdleBackend: a revision at 2 processes goes back to
// 1 while one long stream runs on the newer process, which thaw would stop
// first if both were idle. thaw stops the idle one; the stream completes.
func TestLocalScaleDownStopsIdleBackend(t *testing.T) {
	th := harness.StartThaw(t, harness.ThawOptions{Config: localConfig(t, revisionYAML{
		Name: "pick", Host: "pick.test", Env: abruptExit,
		Autoscaling: fast(map[string]string{"metric": "rps", "target": "1", "min-scale": "1", "max-scale": "2",
			"target-burst-capacity": "0"}),
	})})
	load := startLoad(th, "pick.test", "hello from pick", 2)
	waitStatus(t, th, "local/pick", 60*time.Second, "2 ready backends", func(r map[string]any) bool {
		return num(r, "ready") == 2
	})
	if ok, failed, fails := load.stop(); failed != 0 {
		t.Fatalf("load: %d ok, %d failed: %v", ok, failed, fails)
	}

	// Tell the two processes apart by start time.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := client(10 * time.Second)
	procs := map[int]workloadStats{}
	for i := 0; i < 40 && len(procs) < 2; i++ {
		st, err := fetchWorkloadStats(ctx, c, th, "pick.test")
		if err != nil {
			t.Fatal(err)
		}
		procs[st.Port] = st
	}
	if len(procs) != 2 {
		t.Fatalf("saw %d processes through Envoy in 40 requests, want 2", len(procs))
	}
	var newest, oldest workloadStats
	for _, st := range procs {
		if newest.Pid == 0 || st.Started > newest.Started {
			newest, oldest = st, newest
		} else {
			oldest = st
		}
	}

	// Keep one stream on the newest process.
	var s *sseStream
	for i := 0; i < 20 && s == nil; i++ {
		x := openSSE(t, th, "pick.test", "events=60&interval=500ms")
		if x.port == newest.Port {
			s = x
		} else {
			x.cancel()
			x.wait()
		}
	}
	if s == nil {
		t.Fatalf("20 streams never landed on the newest process (port %d)", newest.Port)
	}
	waitStatus(t, th, "local/pick", 28*time.Second, "back to 1 ready backend while streaming", func(r map[string]any) bool {
		return num(r, "desired") == 1 && num(r, "ready") == 1
	})
	if s.ended() {
		t.Fatalf("the 30 s stream ended before the scale-down (complete=%v, err=%v): nothing was tested", s.complete, s.err)
	}
	waitProcessGone(t, oldest.Pid, 30*time.Second)
	if !processAlive(newest.Pid) {
		t.Fatalf("the busy process %d was stopped; the idle one %d should have been", newest.Pid, oldest.Pid)
	}
	s.wait()
	if s.err != nil || !s.complete {
		t.Fatalf("stream on the busy process: complete=%v err=%v; want it whole", s.complete, s.err)
	}
	ctx, cancel = context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if st, err := fetchWorkloadStats(ctx, c, th, "pick.test"); err != nil || st.Pid != newest.Pid {
		t.Errorf("after the scale-down: %+v %v, want the busy process %d serving", st, err, newest.Pid)
	}
	log := th.Log()
	if !strings.Contains(log, "chosen to stop") || strings.Contains(log, "ranking by connections") {
		t.Errorf("thaw did not rank by Envoy's requests in flight:\n%s", grepLines(log, "chosen to stop"))
	}
}
