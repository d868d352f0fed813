package local

import (
	"context"
	"fmt"
	"slices"
	"time"

	"go.uber.org/zap"

	"github.com/thaw-dev/thaw/revision"
)

// instance is one slot of a revision's scale: a process, restarted on
// crashes, until the slot is stopped. One goroutine (run) owns its process;
// the fields below the mutex line are guarded by Platform.mu.
type instance struct {
	p    *Platform
	rs   *processGroup
	seq  int
	name string
	log  *zap.Logger
	// stop is closed (under Platform.mu, right after the instance left the
	// backend set) when the slot is scaled away.
	stop chan struct{}

	// Guarded by Platform.mu. proc is the running process (nil between
	// restarts); port and pid are its.
	proc     *process
	port     int32
	pid      int
	ready    bool
	stopping bool
}

func newInstance(p *Platform, rs *processGroup, seq int) *instance {
	name := fmt.Sprintf("%s-%d", rs.cfg.Load().Key.Name, seq)
	return &instance{p: p, rs: rs, seq: seq, name: name, stop: make(chan struct{}),
		log: rs.log().With(zap.String("instance", name))}
}

func (in *instance) backend() revision.Backend {
	return revision.Backend{Address: loopback, Port: in.port, Ready: true}
}

// outcome is how supervise ended.
type outcome int

const (
	exited  outcome = iota // the process ended by itself
	stopped                // we stopped it
)

// run supervises the process (adopted, or nil to start one; ready when an
// adopted one passed its probe) and restarts it with exponential backoff
// after crashes until the slot is stopped or ctx (the platform's Run) ends.
func (in *instance) run(ctx context.Context, proc *process, ready bool) {
	p := in.p
	defer p.wg.Done()
	defer in.remove()
	backoff := p.opts.RestartBackoff
	crashes := 0
	for {
		if proc == nil {
			select {
			case <-in.stop:
				return
			case <-ctx.Done():
				return
			default:
			}
			var err error
			if proc, err = in.start(); err != nil {
				in.log.Error("process did not start; retrying", zap.Error(err), zap.Duration("backoff", backoff))
				in.fail(fmt.Sprintf("did not start: %v (retrying in %s)", err, backoff))
				in.wakeFailed(fmt.Sprintf("did not start: %v", err), backoff)
			}
		}
		if proc != nil {
			how, wasReady := in.supervise(ctx, proc, ready)
			if how == stopped {
				return
			}
			if p.opts.Clock.Since(proc.startedAt) >= backoffReset {
				backoff, crashes = p.opts.RestartBackoff, 0
			}
			crashes++
			in.log.Warn("process exited; restarting", zap.Int("pid", proc.pid),
				zap.String("status", proc.status()), zap.Duration("backoff", backoff))
			msg := fmt.Sprintf("%s (%d in a row; restarting in %s)", proc.status(), crashes, backoff)
			if tail := proc.stderr.String(); tail != "" {
				msg += "; stderr: " + tail
			}
			in.fail(msg)
			if !wasReady {
				in.wakeFailed(proc.status()+" before it was ready", backoff)
			}
		}
		proc, ready = nil, false
		if !in.sleep(ctx, backoff) {
			return
		}
		backoff = min(2*backoff, p.opts.MaxBackoff)
	}
}

// start allocates a port and starts the process on it.
func (in *instance) start() (*process, error) {
	p := in.p
	p.mu.Lock()
	port, err := p.allocPortLocked()
	if err == nil {
		in.port = port
	}
	p.mu.Unlock()
	if err != nil {
		return nil, err
	}
	var out *outputFiles
	if p.store != nil {
		out = &outputFiles{store: p.store, base: in.fileBase()}
	}
	proc, err := startProcess(*in.rs.cfg.Load(), in.name, port, out, in.log)
	if err != nil {
		in.releasePort()
		return nil, err
	}
	proc.startedAt = p.opts.Clock.Now()
	p.mu.Lock()
	in.proc, in.pid = proc, proc.pid
	p.running[in] = struct{}{}
	p.saveStateLocked()
	p.clearWakeFailureLocked(in.rs) // the next attempt
	p.mu.Unlock()
	in.log.Info("process started", zap.Int("pid", proc.pid), zap.Int32("port", port))
	return proc, nil
}

// supervise probes the process until it exits or is stopped, publishing
// readiness changes. everReady says it already passed a probe (adopted);
// supervise returns whether it passed one by the end.
func (in *instance) supervise(ctx context.Context, proc *process, everReady bool) (outcome, bool) {
	p := in.p
	probe := in.rs.cfg.Load().Readiness
	failures := 0
	startup := min(probe.Period, p.opts.StartupProbeInterval)
	next := startup
	if everReady {
		next = probe.Period
	}
	timer := p.opts.Clock.NewTimer(next)
	defer timer.Stop()
	for {
		select {
		case <-proc.done:
			in.setReady(false)
			in.releasePort()
			return exited, everReady
		case <-in.stop:
			in.stopProcess(ctx, proc, everReady)
			return stopped, everReady
		case <-ctx.Done():
			in.setReady(false)
			in.stopProcess(ctx, proc, false)
			return stopped, everReady
		case <-timer.C():
		}
		err := p.probe(ctx, probe, proc.port, !everReady)
		switch {
		case err == nil:
			failures = 0
			if !everReady {
				in.log.Info("process ready", zap.Int("pid", proc.pid), zap.Int32("port", proc.port),
					zap.Duration("startup", p.opts.Clock.Since(proc.startedAt)))
			}
			everReady = true
			in.setReady(true)
		case everReady:
			failures++
			if failures == probe.FailureThreshold {
				in.log.Warn("readiness probe failing; not a backend until it passes", zap.Error(err))
				in.setReady(false)
				in.fail("readiness probe failing: " + err.Error())
			}
		}
		next = probe.Period
		if !everReady {
			next = startup
		}
		timer.Reset(next)
	}
}

// stopProcess drains (when the process was a backend and the slot was
// scaled away rather than the platform shut down; see drain), then sends
// SIGTERM to the process group and SIGKILL after the stop timeout.
func (in *instance) stopProcess(ctx context.Context, proc *process, drain bool) {
	if drain && ctx.Err() == nil {
		in.drain(ctx, proc)
	}
	in.p.terminate(proc, in.rs.cfg.Load().StopTimeout, in.log)
	in.releasePort()
}

// sleep waits d on the platform clock; false when the slot was stopped or
// ctx ended first.
func (in *instance) sleep(ctx context.Context, d time.Duration) bool {
	t := in.p.opts.Clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
		return true
	case <-in.stop:
		return false
	case <-ctx.Done():
		return false
	}
}

func (in *instance) setReady(ready bool) {
	p := in.p
	p.mu.Lock()
	defer p.mu.Unlock()
	if in.ready == ready {
		return
	}
	in.ready = ready
	if ready {
		p.clearWakeFailureLocked(in.rs)
	}
	if rs := in.rs; ready && rs.lastErr != "" && (rs.errInstance == in.name ||
		!slices.ContainsFunc(rs.instances, func(x *instance) bool { return x.name == rs.errInstance })) {
		rs.lastErr, rs.errInstance = "", ""
	}
	p.publishLocked(in.rs)
}

// fail records why the instance failed as its revision's last error.
func (in *instance) fail(msg string) {
	p := in.p
	p.mu.Lock()
	defer p.mu.Unlock()
	in.rs.lastErr, in.rs.errInstance = msg, in.name
}

func (in *instance) releasePort() {
	p := in.p
	p.mu.Lock()
	defer p.mu.Unlock()
	if in.port != 0 {
		delete(p.ports, in.port)
		in.port, in.pid = 0, 0
	}
	if in.proc != nil {
		in.proc = nil
		delete(p.running, in)
		p.saveStateLocked()
	}
}

// remove drops the instance from its revision once its process is gone.
func (in *instance) remove() {
	p := in.p
	p.mu.Lock()
	defer p.mu.Unlock()
	rs := in.rs
	for i, x := range rs.instances {
		if x == in {
			rs.instances = append(rs.instances[:i], rs.instances[i+1:]...)
			break
		}
	}
	in.ready = false
	if len(rs.instances) == 0 {
		// Scaled to zero: the next request wakes it again.
		p.clearWakeFailureLocked(rs)
	}
	p.publishLocked(rs)
}
