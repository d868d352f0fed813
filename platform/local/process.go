package local

import (
	"bufio"
	"errors"
	"fmt"
	"io"
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

// maxLine is the longest output line logged in one entry; longer lines are
// split.
const maxLine = 16 << 10

// outputGrace bounds how long output is still read after the process group
// was killed (a daemonized grandchild could hold the pipe forever).
const outputGrace = time.Second

// process is one started OS process, leader of its own process group.
type process struct {
	pid  int
	port int32
	// done is closed once the process has exited, its group was killed and
	// its output was logged.
	done chan struct{}
	err  error // cmd.Wait's result; read after done

	mu     sync.Mutex
	reaped bool // set before the exited leader is reaped; signals stop then
}

// startProcess starts rc's command for one instance on port. The process
// gets its own process group, so signals reach its children; stdout and
// stderr are logged line by line.
func startProcess(rc RevisionConfig, instance string, port int32, log *zap.Logger) (*process, error) {
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

	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = outW, errW
	err = cmd.Start()
	outW.Close()
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		return nil, fmt.Errorf("start %s: %w", args[0], err)
	}
	proc := &process{pid: cmd.Process.Pid, port: port, done: make(chan struct{})}
	plog := log.With(zap.Int("pid", proc.pid))
	var readers sync.WaitGroup
	readers.Add(2)
	go logLines(&readers, outR, plog.With(zap.String("stream", "stdout")))
	go logLines(&readers, errR, plog.With(zap.String("stream", "stderr")))
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
		out := make(chan struct{})
		go func() { readers.Wait(); close(out) }()
		t := time.NewTimer(outputGrace)
		select {
		case <-out:
		case <-t.C:
			outR.Close()
			errR.Close()
			<-out
		}
		t.Stop()
		outR.Close()
		errR.Close()
		close(proc.done)
	}()
	return proc, nil
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
// unless the leader was already reaped. Errors are ignored: the group may be
// exiting.
func (p *process) signal(sig syscall.Signal) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.reaped {
		_ = syscall.Kill(-p.pid, sig)
	}
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
	if p.err == nil {
		return "exit status 0"
	}
	return p.err.Error()
}

func logLines(wg *sync.WaitGroup, r io.Reader, log *zap.Logger) {
	defer wg.Done()
	br := bufio.NewReaderSize(r, maxLine)
	for {
		line, err := br.ReadSlice('\n')
		if len(line) > 0 {
			log.Info("process output", zap.String("line", strings.TrimRight(string(line), "\r\n")))
		}
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			return
		}
	}
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
