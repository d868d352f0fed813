package local

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zaptest/observer"

	"github.com/thaw-dev/thaw/revision"
)

// abruptEnv makes the workload exit 1 ms after SIGTERM, cutting whatever
// it still serves: only the platform's drain can protect a request.
var abruptEnv = map[string]string{"DRAIN_TIMEOUT": "1ms"}

// openStream starts GET /stream on backend b with the given query and
// returns once the headers arrived, with the body still streaming. The
// connection is not kept after the response.
func openStream(t *testing.T, b revision.Backend, query string) *http.Response {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+b.HostPort()+"/stream?"+query, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("stream from %s: %v", b.HostPort(), err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("stream from %s: status %d", b.HostPort(), resp.StatusCode)
	}
	t.Cleanup(func() { resp.Body.Close() })
	// The first event proves the handler runs.
	line, err := bufio.NewReader(io.LimitReader(resp.Body, 64)).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "data: 1 of") {
		t.Fatalf("first event from %s: %q, %v", b.HostPort(), line, err)
	}
	return resp
}

// readRest reads what is left of a stream; it reports whether the stream
// ended with its end marker.
func readRest(resp *http.Response) (complete bool, err error) {
	rest, err := io.ReadAll(resp.Body)
	return strings.HasSuffix(string(rest), "event: end\ndata: done\n\n"), err
}

// instancePort returns the port instance name (e.g. "x-2") was started on.
func (h *harness) instancePort(name string) int32 {
	h.t.Helper()
	e := h.waitLogsWhere("process started", func(e observer.LoggedEntry) bool {
		return e.ContextMap()["instance"] == name
	}, 1)
	port, err := strconv.Atoi(fmt.Sprint(e[len(e)-1].ContextMap()["port"]))
	if err != nil {
		h.t.Fatalf("port of %s: %v", name, err)
	}
	return int32(port)
}

// TestScaleDownWaitsForStream: a process scaled away while it streams a
// response keeps running until the stream ended, although the process
// itself would cut it on SIGTERM, and only then stops.
func TestScaleDownWaitsForStream(t *testing.T) {
	rev := workloadRev(t, "stream", abruptEnv)
	h := startPlatform(t, configOf(rev), nil)
	h.setScale(rev.Key, 1)
	b := h.waitBackends(rev.Key, 1)[0]
	pid := getStats(t, b).Pid

	// 5 s: longer than a read of a large, busy /proc/net/tcp.
	resp := openStream(t, b, "events=25&interval=200ms")
	h.setScale(rev.Key, 0)
	h.waitBackends(rev.Key, 0)
	h.waitLogs("waiting for connections to close before stopping", 1)
	complete, err := readRest(resp)
	if err != nil || !complete {
		t.Fatalf("stream across the scale-down: complete=%v err=%v; want it whole", complete, err)
	}
	waitGone(t, pid)
	if n := len(h.logs.FilterMessage("drain timeout reached; stopping anyway").All()); n != 0 {
		t.Errorf("%d drain timeouts logged, want 0", n)
	}
}

// TestDrainTimeoutBounds: a stream longer than the drain timeout does not
// keep a process scaled away running: it is stopped when the timeout ends.
func TestDrainTimeoutBounds(t *testing.T) {
	rev := workloadRev(t, "bounded", abruptEnv)
	h := startPlatform(t, configOf(rev), func(o *Options) { o.DrainTimeout = 300 * time.Millisecond })
	h.setScale(rev.Key, 1)
	b := h.waitBackends(rev.Key, 1)[0]
	pid := getStats(t, b).Pid

	resp := openStream(t, b, "events=1000&interval=100ms")
	h.setScale(rev.Key, 0)
	waitGone(t, pid)
	h.waitLogs("drain timeout reached; stopping anyway", 1)
	if complete, _ := readRest(resp); complete {
		t.Error("a 100 s stream completed; want it cut when the 300ms drain timeout ended")
	}
}

// TestScaleDownStopsIdleInstance: of two ready instances, the one with a
// request in flight survives a scale-down to 1, although it is the newest
// (which the platform stops first when both are idle), and its request
// completes.
func TestScaleDownStopsIdleInstance(t *testing.T) {
	rev := workloadRev(t, "idle", abruptEnv)
	h := startPlatform(t, configOf(rev), nil)
	h.setScale(rev.Key, 2)
	h.waitBackends(rev.Key, 2)
	busy := revision.Backend{Address: loopback, Port: h.instancePort("idle-2"), Ready: true}

	resp := openStream(t, busy, "events=25&interval=200ms")
	h.setScale(rev.Key, 1)
	stopped := h.waitLogs("process stopped", 1)[0].ContextMap()
	if stopped["instance"] != "idle-1" {
		t.Errorf("stopped instance %v, want idle-1 (no request in flight)", stopped["instance"])
	}
	if got := h.reg.Snapshot().Get(rev.Key).ReadyBackends(); len(got) != 1 || got[0] != busy {
		t.Errorf("backends = %v, want the busy one %v", got, busy)
	}
	complete, err := readRest(resp)
	if err != nil || !complete {
		t.Errorf("stream on the busy instance: complete=%v err=%v; want it whole", complete, err)
	}
	if st := getStats(t, busy); st.Port != int(busy.Port) {
		t.Errorf("busy instance answered as port %d, want %d", st.Port, busy.Port)
	}
}

// blockingRouter records WaitUnrouted calls and blocks them until
// released.
type blockingRouter struct {
	called  chan revision.Backend
	release chan struct{}
}

func (r *blockingRouter) WaitUnrouted(ctx context.Context, key revision.Key, b revision.Backend) error {
	r.called <- b
	select {
	case <-r.release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// TestDrainWaitsForRouting: the drain asks the Router about the backend
// scaled away, and neither asks the Drainer nor signals the process before
// the Router confirmed.
func TestDrainWaitsForRouting(t *testing.T) {
	rev := workloadRev(t, "routed", nil)
	var r *blockingRouter
	var d *recordingDrainer
	h := startPlatform(t, configOf(rev), func(o *Options) {
		r = &blockingRouter{called: make(chan revision.Backend, 1), release: make(chan struct{})}
		d = &recordingDrainer{reg: o.Registry, release: make(chan struct{})}
		close(d.release)
		o.Router, o.Drainer = r, d
	})
	h.setScale(rev.Key, 1)
	b := h.waitBackends(rev.Key, 1)[0]
	pid := getStats(t, b).Pid
	h.setScale(rev.Key, 0)
	select {
	case got := <-r.called:
		if got != b {
			t.Errorf("WaitUnrouted(%v), want %v", got, b)
		}
	case <-time.After(waitLimit):
		t.Fatal("Router.WaitUnrouted never called")
	}
	if st := getStats(t, b); st.Pid != pid {
		t.Fatalf("while routing is unconfirmed the backend answered as pid %d, want %d", st.Pid, pid)
	}
	if n := len(d.recorded()); n != 0 {
		t.Errorf("Drainer asked %d times before routing was confirmed", n)
	}
	close(r.release)
	waitGone(t, pid)
	if n := len(d.recorded()); n != 1 {
		t.Errorf("Drainer asked %d times, want 1", n)
	}
}
