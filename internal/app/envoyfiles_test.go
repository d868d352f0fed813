package app

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
	"golang.org/x/sys/unix"
)

func TestNewFileBudget(t *testing.T) {
	for _, tc := range []struct {
		limit                  int
		reserve, conns, onHold int
	}{
		{256, 32, 28, 196},
		{1024, 128, 112, 784},
		{4096, 256, 480, 3360},
		{20000, 256, 2468, 17276},
		{1 << 20, 256, 4096, 1<<20 - 256 - 4096},
	} {
		b := NewFileBudget(tc.limit)
		if b.Reserve != tc.reserve || b.Connections != tc.conns || b.MaxHeld != tc.onHold {
			t.Errorf("NewFileBudget(%d) = %+v, want reserve %d, connections %d, held %d", tc.limit, b, tc.reserve, tc.conns, tc.onHold)
		}
		if sum := b.Reserve + b.Connections + b.MaxHeld; sum != tc.limit {
			t.Errorf("NewFileBudget(%d) splits %d files", tc.limit, sum)
		}
	}
}

func TestEnvoyFileLimit(t *testing.T) {
	var own unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &own); err != nil {
		t.Fatal(err)
	}
	if own.Max < 1024 || own.Max == unix.RLIM_INFINITY {
		t.Skipf("hard open-file limit %d: the cases below need a finite one of at least 1024", own.Max)
	}
	if got, err := EnvoyFileLimit(0); err != nil || got != int(own.Max) {
		t.Errorf("EnvoyFileLimit(0) = %d, %v; want the hard limit %d", got, err, own.Max)
	}
	if got, err := EnvoyFileLimit(1024); err != nil || got != 1024 {
		t.Errorf("EnvoyFileLimit(1024) = %d, %v", got, err)
	}
	for _, bad := range []int{-1, 100, int(own.Max) + 1} {
		if _, err := EnvoyFileLimit(bad); !errors.Is(err, ErrFileLimit) {
			t.Errorf("EnvoyFileLimit(%d): %v, want ErrFileLimit", bad, err)
		}
	}
	if _, err := EnvoyFileLimit(int(own.Max) + 1); err == nil || !strings.Contains(err.Error(), "ulimit -Hn") {
		t.Errorf("above the hard limit: %v, want the advice to raise it", err)
	}
}

// TestSetEnvoyFileLimit sets the limit of a child process and reads it
// back from /proc.
func TestSetEnvoyFileLimit(t *testing.T) {
	p, err := os.StartProcess("/bin/sleep", []string{"sleep", "30"}, &os.ProcAttr{})
	if err != nil {
		t.Skipf("no /bin/sleep: %v", err)
	}
	defer func() { _ = p.Kill(); _, _ = p.Wait() }()
	if err := SetEnvoyFileLimit(p.Pid, 512); err != nil {
		t.Fatal(err)
	}
	var got unix.Rlimit
	if err := unix.Prlimit(p.Pid, unix.RLIMIT_NOFILE, nil, &got); err != nil {
		t.Fatal(err)
	}
	if got.Cur != 512 {
		t.Errorf("soft limit %d, want 512", got.Cur)
	}
}

// TestFileWatch: Envoy's EMFILE complaints appended to its log are
// counted and reported once per period with the limit and the advice;
// what the log held before the watch started is not.
func TestFileWatch(t *testing.T) {
	path := filepath.Join(t.TempDir(), "envoy.log")
	line := "[2026-11-26 19:00:16.040][12667][error][envoy_bug] socket(2) failed, got error: Too many open files\n"
	if err := os.WriteFile(path, []byte(line), 0o600); err != nil {
		t.Fatal(err)
	}
	core, logs := observer.New(zap.InfoLevel)
	reg := prometheus.NewRegistry()
	w, err := NewFileWatch(FileWatchOptions{Logger: zap.New(core), LogPath: path, Pid: os.Getpid(), Limit: 1024, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1000, 0)
	w.Check(now)
	if logs.Len() != 0 || testutil.ToFloat64(w.exhausted) != 0 {
		t.Fatalf("old complaints reported: %d logs, %v counted", logs.Len(), testutil.ToFloat64(w.exhausted))
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	write := func(s string) {
		if _, err := f.WriteString(s); err != nil {
			t.Fatal(err)
		}
	}
	write(line + "[info] something else\n" + line + "[error] half a line: Too many open")
	w.Check(now.Add(time.Second))
	if got := testutil.ToFloat64(w.exhausted); got != 2 {
		t.Errorf("counted %v complaints, want 2 (the partial line waits)", got)
	}
	if logs.Len() != 1 {
		t.Fatalf("%d log lines, want 1", logs.Len())
	}
	e := logs.All()[0]
	if !strings.Contains(e.Message, "ulimit -n") || e.ContextMap()["limit"] != int64(1024) || e.ContextMap()["complaints"] != int64(2) {
		t.Errorf("log %q %v: want the advice, limit 1024 and 2 complaints", e.Message, e.ContextMap())
	}
	write(" files\n" + line)
	w.Check(now.Add(2 * time.Second))
	if got := testutil.ToFloat64(w.exhausted); got != 4 {
		t.Errorf("counted %v complaints, want 4", got)
	}
	if logs.Len() != 1 {
		t.Errorf("logged again within the period: %d lines", logs.Len())
	}
	w.Check(now.Add(12 * time.Second))
	if logs.Len() != 2 || logs.All()[1].ContextMap()["complaints"] != int64(2) {
		t.Errorf("after the period: %d lines, want a second one with the 2 complaints since", logs.Len())
	}
	if v := testutil.ToFloat64(w.limit); v != 1024 {
		t.Errorf("thaw_envoy_open_files_limit = %v", v)
	}
}
