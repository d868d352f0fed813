package local

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/thaw-dev/thaw/autoscaler"
	"github.com/thaw-dev/thaw/revision"
)

func TestRunPublishesRevisions(t *testing.T) {
	good := workloadRev(t, "good", nil)
	bad := revision.Key{Namespace: "local", Name: "bad"}
	cfg := configOf(good)
	cfg.Invalid[bad] = errors.New("f.yaml: revision local/bad: target: nope")
	h := startPlatform(t, cfg, nil)

	s := h.reg.Snapshot()
	r := s.Get(good.Key)
	if r == nil || len(r.Backends) != 0 || r.Spec.Hosts[0] != "good.localhost" {
		t.Fatalf("good revision = %+v, want it with no backends", r)
	}
	if s.Invalid[bad] == nil {
		t.Errorf("Invalid = %v, want local/bad", s.Invalid)
	}
	cur, ready, err := h.p.GetScale(context.Background(), good.Key)
	if err != nil || cur != 0 || ready != 0 {
		t.Errorf("GetScale = %d, %d, %v; want 0, 0, nil", cur, ready, err)
	}
	for name, err := range map[string]error{
		"GetScale bad": func() error { _, _, err := h.p.GetScale(context.Background(), bad); return err }(),
		"SetScale bad": h.p.SetScale(context.Background(), bad, 1),
	} {
		if !errors.Is(err, autoscaler.ErrNotFound) {
			t.Errorf("%s: %v, want ErrNotFound", name, err)
		}
	}
	if err := h.p.SetScale(context.Background(), good.Key, -1); err == nil {
		t.Error("SetScale(-1): want an error")
	}
}

// TestScaleUpAndDown scales 0→2→0 with processes that cannot listen until a
// gate file exists: they must not become backends before that, then each
// must be a distinct loopback process, and scaling to 0 stops both
// gracefully (SIGTERM, no SIGKILL).
func TestScaleUpAndDown(t *testing.T) {
	rev := workloadRev(t, "updown", nil)
	gate := filepath.Join(rev.Dir, "gate")
	rev.Command = []string{"sh", "-c", `while [ ! -e gate ]; do sleep 0.01; done; exec "$0" --port "$1"`, workloadBin, PortPlaceholder}
	h := startPlatform(t, configOf(rev), nil)

	h.setScale(rev.Key, 2)
	h.waitLogs("process started", 2)
	// Not listening yet: whatever the probes do, no backend can appear.
	time.Sleep(200 * time.Millisecond)
	if r := h.reg.Snapshot().Get(rev.Key); len(r.Backends) != 0 {
		t.Fatalf("backends before the processes listen: %v", r.Backends)
	}
	if cur, ready, err := h.p.GetScale(context.Background(), rev.Key); cur != 2 || ready != 0 || err != nil {
		t.Fatalf("GetScale = %d, %d, %v; want 2, 0, nil", cur, ready, err)
	}

	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	bs := h.waitBackends(rev.Key, 2)
	pids := map[int]bool{}
	for _, b := range bs {
		if b.Address != "127.0.0.1" || b.Port <= 0 {
			t.Errorf("backend %v: want 127.0.0.1 and a port", b)
		}
		st := getStats(t, b)
		if st.Port != int(b.Port) {
			t.Errorf("backend %v answered as port %d", b, st.Port)
		}
		pids[st.Pid] = true
	}
	if bs[0].Port == bs[1].Port || len(pids) != 2 {
		t.Errorf("backends %v (pids %v): want two distinct processes", bs, pids)
	}
	if _, ready, _ := h.p.GetScale(context.Background(), rev.Key); ready != 2 {
		t.Errorf("ready = %d, want 2", ready)
	}
	// The autoscaler's handle reads the same counts without the lookup.
	if r, ok := h.p.ScaleHandle(rev.Key); !ok {
		t.Error("ScaleHandle: no handle for a configured revision")
	} else if cur, ready, err := r.Scale(); cur != 2 || ready != 2 || err != nil {
		t.Errorf("handle Scale = %d, %d, %v; want 2, 2, nil", cur, ready, err)
	}
	if _, ok := h.p.ScaleHandle(revision.Key{Namespace: "local", Name: "absent"}); ok {
		t.Error("ScaleHandle of an unknown revision: want none")
	}

	h.setScale(rev.Key, 0)
	if r := h.reg.Snapshot().Get(rev.Key); len(r.Backends) != 0 {
		t.Errorf("backends right after SetScale(0): %v, want none", r.Backends)
	}
	for pid := range pids {
		waitGone(t, pid)
	}
	stopped := h.waitLogs("process stopped", 2)
	for _, e := range stopped {
		if st := e.ContextMap()["status"]; st != "exit status 0" {
			t.Errorf("process stopped with %v, want a clean exit after SIGTERM", st)
		}
	}
	if n := h.logs.FilterMessage("process still running after SIGTERM; sending SIGKILL").Len(); n != 0 {
		t.Errorf("%d processes needed SIGKILL", n)
	}
}

// TestStopTimeoutKillsGroup: a process group that ignores SIGTERM is killed
// after the stop timeout, children included.
func TestStopTimeoutKillsGroup(t *testing.T) {
	rev := workloadRev(t, "stubborn", nil)
	rev.Command = []string{"sh", "-c", `trap "" TERM; sleep 100 & echo $! > child; echo $$ > leader; wait`}
	rev.Readiness = Probe{Period: time.Second, Timeout: time.Second, FailureThreshold: 1}
	rev.StopTimeout = 200 * time.Millisecond
	h := startPlatform(t, configOf(rev), nil)

	h.setScale(rev.Key, 1)
	child := readPid(t, filepath.Join(rev.Dir, "child"))
	leader := readPid(t, filepath.Join(rev.Dir, "leader"))
	h.setScale(rev.Key, 0)
	waitGone(t, leader)
	waitGone(t, child)
	killed := h.waitLogs("process still running after SIGTERM; sending SIGKILL", 1)
	if pid := killed[0].ContextMap()["pid"]; pid != int64(leader) {
		t.Errorf("SIGKILL logged for pid %v, want %d", pid, leader)
	}
	if st := h.waitLogs("process stopped", 1)[0].ContextMap()["status"]; st != "signal: killed" {
		t.Errorf("status = %v, want signal: killed", st)
	}
}

// TestCrashRestartBackoff: a process that keeps exiting is restarted with
// doubling backoff up to the cap.
func TestCrashRestartBackoff(t *testing.T) {
	rev := workloadRev(t, "crashy", nil)
	rev.Command = []string{"sh", "-c", "echo crashing; exit 3"}
	h := startPlatform(t, configOf(rev), nil) // backoff 20ms doubling to 80ms

	h.setScale(rev.Key, 1)
	entries := h.waitLogs("process exited; restarting", 5)
	var got []string
	for _, e := range entries[:5] {
		m := e.ContextMap()
		if m["status"] != "exit status 3" || m["instance"] != "crashy-1" || m["revision"] != "local/crashy" {
			t.Errorf("restart entry %v: want exit status 3 of local/crashy instance crashy-1", m)
		}
		got = append(got, m["backoff"].(time.Duration).String())
	}
	if want := "20ms 40ms 80ms 80ms 80ms"; strings.Join(got, " ") != want {
		t.Errorf("backoffs = %v, want %s", got, want)
	}
	output := h.waitLogs("process output", 1)[0].ContextMap()
	if output["line"] != "crashing" || output["stream"] != "stdout" || output["instance"] != "crashy-1" {
		t.Errorf("output entry = %v, want line crashing from crashy-1 stdout", output)
	}
}

// TestCrashedBackendReplaced: a ready process that dies leaves the backend
// set and is replaced by a new process on a new port.
func TestCrashedBackendReplaced(t *testing.T) {
	rev := workloadRev(t, "phoenix", nil)
	h := startPlatform(t, configOf(rev), nil)

	h.setScale(rev.Key, 1)
	old := h.waitBackends(rev.Key, 1)[0]
	st := getStats(t, old)
	if err := syscallKill(st.Pid); err != nil {
		t.Fatal(err)
	}
	h.waitSnapshot("a new backend", func(s *revision.Snapshot) bool {
		bs := s.Get(rev.Key).ReadyBackends()
		return len(bs) == 1 && bs[0] != old
	})
	nb := h.waitBackends(rev.Key, 1)[0]
	if nst := getStats(t, nb); nst.Pid == st.Pid {
		t.Errorf("new backend %v has the old pid %d", nb, st.Pid)
	}
	if cur, ready, _ := h.p.GetScale(context.Background(), rev.Key); cur != 1 || ready != 1 {
		t.Errorf("GetScale = %d, %d; want 1, 1", cur, ready)
	}
}

// TestDrainOrder: a backend leaves the registry before the Drainer is asked,
// the process still serves while draining, and only then gets SIGTERM.
func TestDrainOrder(t *testing.T) {
	rev := workloadRev(t, "drain", nil)
	var d *recordingDrainer
	h := startPlatform(t, configOf(rev), func(o *Options) {
		d = &recordingDrainer{reg: o.Registry, release: make(chan struct{})}
		o.Drainer = d
	})

	h.setScale(rev.Key, 2)
	bs := h.waitBackends(rev.Key, 2)
	h.setScale(rev.Key, 1)
	left := h.waitBackends(rev.Key, 1)
	var victim revision.Backend
	for _, b := range bs {
		if b != left[0] {
			victim = b
		}
	}
	pid := getStats(t, victim).Pid
	deadline := time.Now().Add(waitLimit)
	for len(d.recorded()) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("Drainer.WaitIdle never called")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// While the drainer holds it, the process must still be running.
	if st := getStats(t, victim); st.Pid != pid {
		t.Fatalf("victim answered as pid %d, want %d", st.Pid, pid)
	}
	call := d.recorded()[0]
	if call.key != rev.Key || call.backend != victim || call.inRegistry || call.alive != nil {
		t.Errorf("WaitIdle call %+v: want key %s, backend %v, not in the registry, alive", call, rev.Key, victim)
	}
	close(d.release)
	waitGone(t, pid)
	if got := h.reg.Snapshot().Get(rev.Key).ReadyBackends(); len(got) != 1 || got[0] != left[0] {
		t.Errorf("backends = %v, want %v", got, left)
	}
	if n := len(d.recorded()); n != 1 {
		t.Errorf("WaitIdle called %d times, want 1", n)
	}
}

func readPid(t *testing.T, path string) int {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		b, err := os.ReadFile(path)
		if err == nil && strings.HasSuffix(string(b), "\n") {
			n, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			return n
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not written within %s", path, waitLimit)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestScaleDownPrefersNotReady: with an older instance that never becomes
// ready and a newer ready one, scaling down stops the one that is not ready.
func TestScaleDownPrefersNotReady(t *testing.T) {
	rev := workloadRev(t, "pref", nil)
	rev.Command = []string{"sh", "-c", `if [ "$THAW_INSTANCE" = pref-1 ]; then exec sleep 100; fi; exec "$0" --port "$1"`, workloadBin, PortPlaceholder}
	h := startPlatform(t, configOf(rev), nil)

	h.setScale(rev.Key, 2)
	ready := h.waitBackends(rev.Key, 1)[0]
	h.setScale(rev.Key, 1)
	stopped := h.waitLogs("process stopped", 1)[0].ContextMap()
	if stopped["instance"] != "pref-1" {
		t.Errorf("stopped instance %v, want pref-1 (not ready)", stopped["instance"])
	}
	if got := h.reg.Snapshot().Get(rev.Key).ReadyBackends(); len(got) != 1 || got[0] != ready {
		t.Errorf("backends = %v, want %v", got, ready)
	}
	if cur, n, _ := h.p.GetScale(context.Background(), rev.Key); cur != 1 || n != 1 {
		t.Errorf("GetScale = %d, %d; want 1, 1", cur, n)
	}
}

// countingLoad is a LoadSource that reports no load and counts its calls.
type countingLoad struct{ calls atomic.Int32 }

func (c *countingLoad) Load(context.Context, ...revision.Key) (map[string]BackendLoad, error) {
	c.calls.Add(1)
	return nil, nil
}

// TestScaleDownAsksLoadOnlyToChoose: the LoadSource (Envoy's admin, costly
// at many revisions) is asked which instance to stop only when some stop
// and some stay; a scale to zero stops them all without asking.
func TestScaleDownAsksLoadOnlyToChoose(t *testing.T) {
	rev := workloadRev(t, "ask", nil)
	load := &countingLoad{}
	h := startPlatform(t, configOf(rev), func(o *Options) { o.Load = load })
	h.setScale(rev.Key, 2)
	h.waitBackends(rev.Key, 2)
	ctx := context.Background()
	if got := h.p.loadForScaleDown(ctx, rev.Key, 0); got != nil || load.calls.Load() != 0 {
		t.Errorf("to zero: load %v after %d Load calls, want nil after none", got, load.calls.Load())
	}
	if got := h.p.loadForScaleDown(ctx, rev.Key, 2); got != nil || load.calls.Load() != 0 {
		t.Errorf("no scale-down: load %v after %d Load calls, want nil after none", got, load.calls.Load())
	}
	if got := h.p.loadForScaleDown(ctx, rev.Key, 1); len(got) != 2 || load.calls.Load() != 1 {
		t.Errorf("2 -> 1: load %v after %d Load calls, want both ports after one", got, load.calls.Load())
	}
}
