package local

import (
	"context"
	"errors"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/thaw-dev/thaw/revision"
)

// wrappedCommand runs the workload through sh -c "exec ...": the process's
// command line then differs from the one started, so adoption recognises
// it by the environment thaw gave it.
func wrappedCommand() []string {
	return []string{"sh", "-c", `exec "$0" --port "$1"`, workloadBin, PortPlaceholder}
}

// TestAdoptAfterCrash: thaw is killed with SIGKILL while its processes
// serve; the processes keep serving; a new Platform on the same state dir
// publishes them as ready backends in its very first synced snapshot (the
// same processes, nothing restarted), stops them gracefully on scale to 0
// (their shutdown output, written after the crash, reaches the log: no
// SIGPIPE) and removes the state file on a clean shutdown.
func TestAdoptAfterCrash(t *testing.T) {
	stateDir := t.TempDir()
	plain := crashRev{Name: "survivor", Dir: t.TempDir(), Env: map[string]string{"BODY": "hi"}, Scale: 2}
	wrapped := crashRev{Name: "wrapped", Dir: t.TempDir(), Command: wrappedCommand(), Scale: 1}
	spec := crashSpec{StateDir: stateDir, Revs: []crashRev{plain, wrapped}}
	before := runCrashedThaw(t, spec)

	cfg := crashConfig(spec)
	pids := map[revision.Backend]int{}
	for _, rc := range cfg.Revisions {
		for _, b := range before[rc.Key.String()] {
			pids[b] = getStats(t, b).Pid // still serving after the crash
		}
	}
	if len(pids) != 3 {
		t.Fatalf("crashed thaw had backends %v, want 3 distinct", before)
	}

	h := startPlatform(t, cfg, func(o *Options) { o.StateDir = stateDir })
	for _, rc := range cfg.Revisions {
		want := before[rc.Key.String()]
		got := h.synced.Get(rc.Key).ReadyBackends()
		if !slices.Equal(got, want) {
			t.Errorf("%s: first synced snapshot has backends %v, want the crashed thaw's %v", rc.Key, got, want)
		}
		cur, ready, err := h.p.GetScale(context.Background(), rc.Key)
		if err != nil || cur != int32(len(want)) || ready != int32(len(want)) {
			t.Errorf("%s: GetScale = %d, %d, %v; want %d, %d", rc.Key, cur, ready, err, len(want), len(want))
		}
	}
	for b, pid := range pids {
		if st := getStats(t, b); st.Pid != pid {
			t.Errorf("backend %v is pid %d, want the adopted %d", b, st.Pid, pid)
		}
	}
	if n := h.logs.FilterMessage("adopted running process").Len(); n != 3 {
		t.Errorf("%d processes adopted, want 3", n)
	}
	if n := h.logs.FilterMessage("process started").Len(); n != 0 {
		t.Errorf("%d processes started, want none", n)
	}

	// A new instance gets a fresh name, not one of the adopted ones.
	h.setScale(cfg.Revisions[1].Key, 2)
	h.waitBackends(cfg.Revisions[1].Key, 2)
	if got := h.waitLogs("process started", 1)[0].ContextMap()["instance"]; got != "wrapped-2" {
		t.Errorf("new instance %v, want wrapped-2", got)
	}

	for _, rc := range cfg.Revisions {
		h.setScale(rc.Key, 0)
	}
	for _, pid := range pids {
		waitExited(t, pid)
	}
	stopped := h.waitLogsWhere("process stopped", func(e observer.LoggedEntry) bool {
		return e.ContextMap()["status"] == "exited (adopted process: exit status unknown)"
	}, 3)
	if len(stopped) != 3 {
		t.Errorf("%d adopted processes stopped, want 3", len(stopped))
	}
	h.waitLogsWhere("process output", func(e observer.LoggedEntry) bool {
		line, _ := e.ContextMap()["line"].(string)
		return strings.Contains(line, "stopped after serving")
	}, 4)
	if n := h.logs.FilterMessage("process still running after SIGTERM; sending SIGKILL").Len(); n != 0 {
		t.Errorf("%d processes needed SIGKILL", n)
	}

	h.stop()
	assertNoState(t, stateDir)
}

// TestAdoptStopsChangedAndRemoved: recorded processes whose revision's
// environment changed, whose revision is gone, or whose executable was
// rebuilt are stopped, not adopted.
func TestAdoptStopsChangedAndRemoved(t *testing.T) {
	stateDir := t.TempDir()
	changed := crashRev{Name: "changed", Dir: t.TempDir(), Scale: 1}
	removed := crashRev{Name: "removed", Dir: t.TempDir(), Scale: 1}
	rebuiltDir := t.TempDir()
	bin := filepath.Join(rebuiltDir, "workload")
	copyFile(t, workloadBin, bin)
	rebuilt := crashRev{Name: "rebuilt", Dir: rebuiltDir, Command: []string{bin, "--port", PortPlaceholder}, Scale: 1}
	before := runCrashedThaw(t, crashSpec{StateDir: stateDir, Revs: []crashRev{changed, removed, rebuilt}})
	var pids []int
	for _, bs := range before {
		for _, b := range bs {
			pids = append(pids, getStats(t, b).Pid)
		}
	}
	if len(pids) != 3 {
		t.Fatalf("crashed thaw had backends %v, want 3", before)
	}

	changed.Env = map[string]string{"BODY": "new"}
	copyFile(t, workloadBin, bin+".new") // a rebuild: a new file renamed over the old
	if err := os.Rename(bin+".new", bin); err != nil {
		t.Fatal(err)
	}
	cfg := crashConfig(crashSpec{Revs: []crashRev{changed, rebuilt}})
	h := startPlatform(t, cfg, func(o *Options) { o.StateDir = stateDir })
	for _, rc := range cfg.Revisions {
		if bs := h.synced.Get(rc.Key).Backends; len(bs) != 0 {
			t.Errorf("%s: first synced snapshot has backends %v, want none", rc.Key, bs)
		}
		if cur, _, _ := h.p.GetScale(context.Background(), rc.Key); cur != 0 {
			t.Errorf("%s: desired scale %d, want 0", rc.Key, cur)
		}
	}
	for _, pid := range pids {
		waitExited(t, pid)
	}
	reasons := map[string]string{}
	for _, e := range h.waitLogs("stopping recorded process", 3) {
		m := e.ContextMap()
		reasons[m["revision"].(string)] = m["reason"].(string)
	}
	want := map[string]string{
		"local/changed": "command, directory or environment changed",
		"local/removed": "revision no longer configured",
		"local/rebuilt": "executable replaced on disk since it started",
	}
	if !maps.Equal(reasons, want) {
		t.Errorf("stop reasons = %v, want %v", reasons, want)
	}
	if n := h.logs.FilterMessage("adopted running process").Len(); n != 0 {
		t.Errorf("%d processes adopted, want none", n)
	}
	h.stop()
	assertNoState(t, stateDir)
}

// TestAdoptIgnoresForeignProcesses: a state file naming a dead pid, or a
// live process that is not the recorded one (other command line and
// environment, or another start time), neither adopts nor signals it.
func TestAdoptIgnoresForeignProcesses(t *testing.T) {
	sleep := exec.Command("sleep", "60")
	sleep.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := sleep.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sleep.Process.Kill(); _ = sleep.Wait() })
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	st, err := readProcStat(sleep.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}

	rev := workloadRev(t, "foreign", nil)
	record := func(seq, pid int, ticks uint64) stateInstance {
		return stateInstance{Revision: rev.Key.String(), Instance: "foreign-" + strconv.Itoa(seq), Seq: seq,
			Pid: pid, Pgid: pid, Port: 1, Fingerprint: configFingerprint(rev),
			Argv: []string{workloadBin, "--port", "1"}, StartTicks: ticks, BootID: bootID(), StopTimeoutMS: 100}
	}
	stateDir := t.TempDir()
	store := &stateStore{dir: stateDir}
	err = store.save([]stateInstance{
		record(1, dead.Process.Pid, st.startTicks),
		record(2, sleep.Process.Pid, st.startTicks),   // command line and environment differ
		record(3, sleep.Process.Pid, st.startTicks+1), // pid "reused"
	})
	if err != nil {
		t.Fatal(err)
	}

	h := startPlatform(t, configOf(rev), func(o *Options) { o.StateDir = stateDir })
	if bs := h.synced.Get(rev.Key).Backends; len(bs) != 0 {
		t.Errorf("backends %v, want none", bs)
	}
	ignored := h.waitLogs("recorded process not adopted: gone or not ours", 3)
	for _, e := range ignored {
		t.Logf("ignored %v: %v", e.ContextMap()["instance"], e.ContextMap()["error"])
	}
	for _, msg := range []string{"adopted running process", "stopping recorded process", "stopping process"} {
		if n := h.logs.FilterMessage(msg).Len(); n != 0 {
			t.Errorf("%d log entries %q, want none", n, msg)
		}
	}
	if cur, _, _ := h.p.GetScale(context.Background(), rev.Key); cur != 0 {
		t.Errorf("desired scale %d, want 0", cur)
	}
	// New instances are numbered after the recorded ones.
	h.setScale(rev.Key, 1)
	h.waitBackends(rev.Key, 1)
	if got := h.waitLogs("process started", 1)[0].ContextMap()["instance"]; got != "foreign-4" {
		t.Errorf("new instance %v, want foreign-4", got)
	}
	h.stop()
	if !sameProcess(sleep.Process.Pid, st.startTicks) {
		t.Errorf("sleep %d was stopped; it was never ours", sleep.Process.Pid)
	}
	assertNoState(t, stateDir)
}

// TestStateDirInUse: a second Platform on a held state dir does not run.
func TestStateDirInUse(t *testing.T) {
	stateDir := t.TempDir()
	rev := workloadRev(t, "busy", nil)
	startPlatform(t, configOf(rev), func(o *Options) { o.StateDir = stateDir })
	reg := revision.NewRegistry(revision.RegistryOptions{})
	p := New(Options{Logger: zap.NewNop(), Registry: reg, Config: configOf(rev), StateDir: stateDir})
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := p.Run(ctx); !errors.Is(err, ErrStateDirInUse) {
		t.Errorf("second Run = %v, want ErrStateDirInUse", err)
	}
	if err := p.SetScale(ctx, rev.Key, 1); !errors.Is(err, ErrNotRunning) {
		t.Errorf("SetScale after a failed Run = %v, want ErrNotRunning", err)
	}
	if reg.Snapshot().Synced {
		t.Error("a Platform that did not run marked the registry synced")
	}
}

func TestParseProcStat(t *testing.T) {
	tail := " 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 4242 18 19\n"
	tests := []struct {
		name string
		in   string
		want procStat
		err  bool
	}{
		{"plain", "12 (sleep) S 1 12" + tail, procStat{state: 'S', pgrp: 12, startTicks: 4242}, false},
		{"name with parens and spaces", "12 (a) b (c) Z 1 7" + tail, procStat{state: 'Z', pgrp: 7, startTicks: 4242}, false},
		{"truncated", "12 (sleep) S 1 12 3", procStat{}, true},
		{"no name", "12 sleep S", procStat{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseProcStat([]byte(tt.in))
			if (err != nil) != tt.err || got != tt.want {
				t.Errorf("parseProcStat(%q) = %+v, %v; want %+v, error %v", tt.in, got, err, tt.want, tt.err)
			}
		})
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err == nil {
		err = os.WriteFile(to, b, 0o755)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// assertNoState checks a clean shutdown left no state file and no output.
func assertNoState(t *testing.T, dir string) {
	t.Helper()
	for _, name := range []string{stateFileName, outputDirName} {
		if _, err := os.Stat(filepath.Join(dir, name)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s after a clean shutdown: %v, want it gone", name, err)
		}
	}
}
