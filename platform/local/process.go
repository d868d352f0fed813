package local

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"
)

// loopback is the address every process listens on.
const loopback = "127.0.0.1"

// adoptPoll is how often an adopted process is checked for exit.
const adoptPoll = 200 * time.Millisecond

// process is one OS process, leader of its own process group: started by
// this platform (a child) or adopted from a crashed thaw's state file.
type process struct {
	pid        int
	port       int32
	argv       []string // as started, port substituted
	startTicks uint64   // see procStat; 0 if unknown
	startedAt  time.Time
	adopted    bool
	// done is closed once the process has exited, its group was killed and
	// its output was logged.
	done chan struct{}
	err  error // cmd.Wait's result; read after done
	// stderr keeps the last lines the process wrote to stderr.
	stderr *lineTail

	mu     sync.Mutex
	reaped bool // set before the exited leader is reaped; signals stop then
}

// startProcess starts rc's command for one instance on port. The process
// gets its own process group, so signals reach its children. Its stdout and
// stderr are logged line by line; they go through pipes, or through the
// files of out when set (a pipe would break, and kill the process with
// SIGPIPE, when thaw crashes).
func startProcess(rc RevisionConfig, instance string, port int32, out *outputFiles, log *zap.Logger) (*process, error) {
	ps := strconv.Itoa(int(port))
	args := make([]string, len(rc.Command))
	for i, a := range rc.Command {
		args[i] = strings.ReplaceAll(a, PortPlaceholder, ps)
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir = rc.Dir
	cmd.Env = processEnv(rc, instance, ps)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Stdin = nil

	var streams [2]stream
	var err error
	if out != nil {
		streams, err = out.create()
	} else {
		streams, err = pipeStreams()
	}
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = streams[0].w, streams[1].w
	err = cmd.Start()
	for _, s := range streams {
		s.w.Close()
	}
	if err != nil {
		for _, s := range streams {
			s.r.close()
		}
		return nil, fmt.Errorf("start %s: %w", args[0], err)
	}
	proc := &process{pid: cmd.Process.Pid, port: port, argv: args, done: make(chan struct{}), stderr: &lineTail{}}
	// The child is not reaped before waitExit below, so its pid is stable.
	if st, err := readProcStat(proc.pid); err == nil {
		proc.startTicks = st.startTicks
	}
	readers := logStreams(streams[:], log.With(zap.Int("pid", proc.pid)), proc.stderr)
	go func() {
		// Wait for the leader to exit without reaping it: while it is a
		// zombie its pid, and so the group id, cannot be reused. Children
		// left in the group end with their leader; then the leader is
		// reaped and no signal is sent to that id again.
		waitExit(proc.pid)
		proc.mu.Lock()
		_ = syscall.Kill(-proc.pid, syscall.SIGKILL)
		proc.reaped = true
		proc.mu.Unlock()
		proc.err = cmd.Wait()
		finishStreams(streams[:], readers)
		close(proc.done)
	}()
	return proc, nil
}

// adoptProcess returns the process e recorded (verified by the caller). It
// is not a child: its exit is seen by polling /proc every adoptPoll, and its
// exit status is unknown. streams follow its output files (none: output not
// captured).
func adoptProcess(e stateInstance, streams []stream, log *zap.Logger) *process {
	proc := &process{pid: e.Pid, port: e.Port, argv: e.Argv, startTicks: e.StartTicks,
		adopted: true, done: make(chan struct{}), stderr: &lineTail{}}
	readers := logStreams(streams, log.With(zap.Int("pid", proc.pid)), proc.stderr)
	go func() {
		t := time.NewTicker(adoptPoll)
		for sameProcess(proc.pid, proc.startTicks) {
			<-t.C
		}
		t.Stop()
		// Children left in its group are not killed: once the leader is
		// gone (and reaped by its new parent) the group id can name
		// another group.
		proc.mu.Lock()
		proc.reaped = true
		proc.mu.Unlock()
		finishStreams(streams, readers)
		close(proc.done)
	}()
	return proc
}

// processEnv is thaw's environment, then the revision's env, then PORT,
// THAW_REVISION and THAW_INSTANCE.
func processEnv(rc RevisionConfig, instance, port string) []string {
	env := os.Environ()
	keys := make([]string, 0, len(rc.Env))
	for k := range rc.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		env = append(env, k+"="+rc.Env[k])
	}
	return append(env, "PORT="+port, "THAW_REVISION="+rc.Key.String(), "THAW_INSTANCE="+instance)
}

// signal sends sig to the process group (by its id, the leader's pid)
// unless the leader was already reaped (or, adopted, is no longer the
// recorded process). Errors are ignored: the group may be
// exiting.
func (p *process) signal(sig syscall.Signal) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.reaped || p.adopted && !sameProcess(p.pid, p.startTicks) {
		return
	}
	_ = syscall.Kill(-p.pid, sig)
}

// waitExit blocks until process pid has exited, leaving it unreaped
// (waitid with WNOWAIT).
func waitExit(pid int) {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if !errors.Is(err, unix.EINTR) {
			return
		}
	}
}

// status describes how the process ended; call after done.
func (p *process) status() string {
	if p.adopted {
		return "exited (adopted process: exit status unknown)"
	}
	if p.err == nil {
		return "exit status 0"
	}
	return p.err.Error()
}

// freePort asks the kernel for a free loopback port by listening on port 0
// and closing the listener. Another program may take the port before the
// process binds it; the process then fails to start listening, exits or
// never passes its probe, and is restarted on a new port.
func freePort() (int32, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort(loopback, "0"))
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	if err := ln.Close(); err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	return int32(port), nil
}
