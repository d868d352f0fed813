package local

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/thaw-dev/thaw/revision"
)

// crashChildEnv makes the test binary run crashChild instead of the tests:
// a thaw stand-in that a test kills with SIGKILL.
const crashChildEnv = "THAW_LOCAL_CRASH_CHILD"

// crashSpec tells the child what to run; crashConfig turns it into the same
// Config in the child and in the test.
type crashSpec struct {
	Workload string
	StateDir string
	Revs     []crashRev
}

type crashRev struct {
	Name    string
	Dir     string
	Env     map[string]string
	Command []string // default: the workload on {port}
	Scale   int32
}

func crashConfig(spec crashSpec) *Config {
	var revs []RevisionConfig
	for _, r := range spec.Revs {
		rc := workloadRevIn(r.Name, r.Dir, r.Env)
		if r.Command != nil {
			rc.Command = r.Command
		}
		revs = append(revs, rc)
	}
	return configOf(revs...)
}

// crashChild runs a Platform with the spec's StateDir, scales every
// revision, prints the ready backends as one JSON line (revision key →
// backends) and then waits to be killed.
func crashChild(specJSON string) {
	var spec crashSpec
	if err := json.Unmarshal([]byte(specJSON), &spec); err != nil {
		fmt.Fprintln(os.Stderr, "crash child:", err)
		os.Exit(2)
	}
	workloadBin = spec.Workload
	logger, err := zap.NewDevelopment()
	if err != nil {
		os.Exit(2)
	}
	reg := revision.NewRegistry(revision.RegistryOptions{Logger: logger})
	cfg := crashConfig(spec)
	p := New(Options{Logger: logger, Registry: reg, Config: cfg, StateDir: spec.StateDir})
	go func() {
		if err := p.Run(context.Background()); err != nil {
			logger.Fatal("Run", zap.Error(err))
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if _, err := reg.WaitFor(ctx, func(s *revision.Snapshot) bool { return s.Synced }); err != nil {
		logger.Fatal("not synced", zap.Error(err))
	}
	for _, r := range spec.Revs {
		if err := p.SetScale(ctx, revision.Key{Namespace: DefaultNamespace, Name: r.Name}, r.Scale); err != nil {
			logger.Fatal("SetScale", zap.Error(err))
		}
	}
	s, err := reg.WaitFor(ctx, func(s *revision.Snapshot) bool {
		for i, rc := range cfg.Revisions { // in spec.Revs order
			if len(s.Get(rc.Key).ReadyBackends()) != int(spec.Revs[i].Scale) {
				return false
			}
		}
		return true
	})
	if err != nil {
		logger.Fatal("backends not ready", zap.Error(err))
	}
	out := map[string][]revision.Backend{}
	for _, rc := range cfg.Revisions {
		out[rc.Key.String()] = s.Get(rc.Key).ReadyBackends()
	}
	b, _ := json.Marshal(out)
	fmt.Printf("%s\n", b)
	select {}
}

// runCrashedThaw runs crashChild with spec, waits for its backends, kills
// it with SIGKILL (so nothing is stopped and the state file stays) and
// returns the backends it had, by revision key.
func runCrashedThaw(t *testing.T, spec crashSpec) map[string][]revision.Backend {
	t.Helper()
	spec.Workload = workloadBin
	b, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), crashChildEnv+"="+string(b))
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan []byte, 1)
	go func() {
		line, _ := bufio.NewReader(stdout).ReadBytes('\n')
		lines <- line
	}()
	var line []byte
	select {
	case line = <-lines:
	case <-time.After(waitLimit):
	}
	// SIGKILL: the crash. Only the child itself; its processes live on.
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	t.Logf("crashed thaw's log:\n%s", stderr.String())
	// Should the test fail before the processes are stopped, kill the ones
	// the crashed thaw recorded (verified: pid and start time).
	recorded, err := (&stateStore{dir: spec.StateDir}).load()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, e := range recorded {
			if sameProcess(e.Pid, e.StartTicks) {
				_ = syscall.Kill(-e.Pgid, syscall.SIGKILL)
			}
		}
	})
	var out map[string][]revision.Backend
	if err := json.Unmarshal(line, &out); err != nil {
		t.Fatalf("crashed thaw reported %q: %v", line, err)
	}
	return out
}

// lockedBuffer is a bytes.Buffer safe for a writer and a reader.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// waitExited waits until pid is gone or a zombie (an orphan whose new
// parent does not reap it still counts as exited).
func waitExited(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		st, err := readProcStat(pid)
		if err != nil || st.state == 'Z' || st.state == 'X' {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d still running after %s", pid, waitLimit)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
