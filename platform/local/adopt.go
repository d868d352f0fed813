package local

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/thaw-dev/thaw/revision"
)

// adoptedInstance is a recorded process Run adopts as an instance.
type adoptedInstance struct {
	rs    *processGroup
	e     stateInstance
	proc  *process
	ready bool // passed the probe at adoption
}

// adopt reads the state file left by a previous Run and sorts the recorded
// processes. A process is only ever touched when verifyOwned proves it is
// the one recorded. Such a process is adopted when its revision is still
// configured with the same command, directory and environment
// (fingerprint) and its executable was not replaced on disk; it is then probed once (bounded by the probe's timeout) so
// it can be published before the registry is synced. Otherwise it is
// stopped: DrainPeriod first (Envoy may still route to it until it has the
// new snapshot), then SIGTERM to its group, SIGKILL after the recorded stop
// timeout. Processes that are gone or not ours are forgotten.
func (p *Platform) adopt(ctx context.Context) []adoptedInstance {
	entries, err := p.store.load()
	if err != nil {
		p.log.Warn("ignoring unreadable state file; recorded processes are not adopted", zap.Error(err))
	}
	var adopted []adoptedInstance
	keep := map[string]bool{} // output file bases in use
	taken := map[string]bool{}
	p.mu.Lock()
	for _, e := range entries {
		log := p.log.With(zap.String("revision", e.Revision), zap.String("instance", e.Instance))
		key, kerr := revision.ParseKey(e.Revision)
		rs := p.revMap()[key]
		if rs != nil && kerr == nil {
			rs.seq = max(rs.seq, e.Seq)
		}
		if err := verifyOwned(e, p.boot); err != nil {
			log.Info("recorded process not adopted: gone or not ours", zap.Int("pid", e.Pid), zap.Error(err))
			continue
		}
		base := fmt.Sprintf("%s_%s", key.Namespace, e.Instance)
		keep[base] = true
		files := &outputFiles{store: p.store, base: base}
		streams := files.follow()
		proc := adoptProcess(e, streams, log)
		proc.startedAt = e.StartedAt
		if proc.startedAt.IsZero() {
			proc.startedAt = p.opts.Clock.Now()
		}
		why := ""
		switch {
		case kerr != nil || rs == nil:
			why = "revision no longer configured"
		case e.Fingerprint != rs.fingerprint:
			why = "command, directory or environment changed"
		case exeReplaced(e.Pid):
			why = "executable replaced on disk since it started"
		case e.Instance != fmt.Sprintf("%s-%d", key.Name, e.Seq) || taken[e.Instance]:
			why = "inconsistent record"
		}
		if why != "" {
			log.Info("stopping recorded process", zap.Int("pid", e.Pid), zap.String("reason", why))
			p.stale[proc] = e
			p.wg.Add(1)
			go p.stopStale(ctx, proc, time.Duration(e.StopTimeoutMS)*time.Millisecond, log)
			continue
		}
		taken[e.Instance] = true
		output := "followed from now on; lines written while thaw was down are not logged"
		if len(streams) == 0 {
			output = "not captured: output files missing"
		}
		log.Info("adopted running process", zap.Int("pid", e.Pid), zap.Int32("port", e.Port), zap.String("output", output))
		adopted = append(adopted, adoptedInstance{rs: rs, e: e, proc: proc})
	}
	p.mu.Unlock()
	p.removeOutputExcept(keep)

	var wg sync.WaitGroup
	for i := range adopted {
		a := &adopted[i]
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := p.probe(ctx, a.rs.cfg.Load().Readiness, a.e.Port, false)
			a.ready = err == nil
			if err != nil {
				a.rs.log().Warn("adopted process failed its first probe; not a backend until it passes",
					zap.String("instance", a.e.Instance), zap.Error(err))
			}
		}()
	}
	wg.Wait()
	return adopted
}

// exeReplaced reports whether the program pid runs was deleted or replaced
// (for example rebuilt) since it started: it runs old code.
func exeReplaced(pid int) bool {
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	return err == nil && strings.HasSuffix(exe, " (deleted)")
}

// installAdoptedLocked makes the adopted processes instances of their
// revisions, sets each such revision's desired scale to its adopted count
// (superseding a SetScale made before Run) and publishes the ready ones.
func (p *Platform) installAdoptedLocked(adopted []adoptedInstance) {
	counts := map[*processGroup]int32{}
	for _, a := range adopted {
		rs := a.rs
		in := newInstance(p, rs, a.e.Seq)
		in.proc, in.pid, in.port, in.ready = a.proc, a.proc.pid, a.e.Port, a.ready
		p.running[in] = struct{}{}
		p.ports[a.e.Port] = true
		rs.instances = append(rs.instances, in)
		counts[rs]++
		p.wg.Add(1)
		go in.run(p.runCtx, a.proc, a.ready)
	}
	for rs, n := range counts {
		rs.log().Info("adopted processes", zap.Int32("count", n), zap.Int32("previousDesired", rs.desired))
		rs.desired = n
		p.publishLocked(rs)
	}
}

// stopStale stops a recorded process that is not adopted.
func (p *Platform) stopStale(ctx context.Context, proc *process, timeout time.Duration, log *zap.Logger) {
	defer p.wg.Done()
	if p.opts.DrainPeriod > 0 {
		t := p.opts.Clock.NewTimer(p.opts.DrainPeriod)
		select {
		case <-t.C():
		case <-ctx.Done():
		case <-proc.done:
		}
		t.Stop()
	}
	if timeout <= 0 {
		timeout = DefaultStopTimeout
	}
	p.terminate(proc, timeout, log)
	p.mu.Lock()
	delete(p.stale, proc)
	p.saveStateLocked()
	p.mu.Unlock()
}

// terminate sends SIGTERM to proc's group, SIGKILL after timeout, and
// returns once the process is gone.
func (p *Platform) terminate(proc *process, timeout time.Duration, log *zap.Logger) {
	select {
	case <-proc.done:
		return
	default:
	}
	log.Info("stopping process", zap.Int("pid", proc.pid), zap.Duration("timeout", timeout))
	proc.signal(syscall.SIGTERM)
	t := p.opts.Clock.NewTimer(timeout)
	select {
	case <-proc.done:
		t.Stop()
	case <-t.C():
		log.Warn("process still running after SIGTERM; sending SIGKILL", zap.Int("pid", proc.pid),
			zap.Duration("timeout", timeout))
		proc.signal(syscall.SIGKILL)
		<-proc.done
	}
	log.Info("process stopped", zap.Int("pid", proc.pid), zap.String("status", proc.status()))
}

// saveStateLocked records every live process (instances and stale ones) in
// the state file, or removes it when there is none. It walks the instances
// with a process (p.running), not every revision: it runs on every process
// start and exit, and a wake waits for it before its first probe (at
// 100,000 revisions the walk took milliseconds; docs/scaling.md). Failures are logged:
// the processes run on, only adoption after a crash is affected.
func (p *Platform) saveStateLocked() {
	if p.store == nil {
		return
	}
	var out []stateInstance
	revs := p.revMap()
	for in := range p.running {
		rs := in.rs
		if in.proc == nil || revs[rs.cfg.Load().Key] != rs {
			continue // a revision a reload removed: as before, not recorded
		}
		out = append(out, stateInstance{
			Revision: rs.cfg.Load().Key.String(), Instance: in.name, Seq: in.seq,
			Pid: in.proc.pid, Pgid: in.proc.pid, Port: in.proc.port,
			Fingerprint: rs.fingerprint, Argv: in.proc.argv, StartedAt: in.proc.startedAt,
			StartTicks: in.proc.startTicks, BootID: p.boot,
			StopTimeoutMS: rs.cfg.Load().StopTimeout.Milliseconds(),
		})
	}
	for _, e := range p.stale {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Pid < out[j].Pid })
	if err := p.store.save(out); err != nil {
		p.log.Error("cannot record running processes; a restarted thaw will not adopt them", zap.Error(err))
	}
}

// removeOutputExcept deletes output files of processes that are gone.
func (p *Platform) removeOutputExcept(keep map[string]bool) {
	dir := filepath.Join(p.store.dir, outputDirName)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, de := range ents {
		base := strings.TrimSuffix(strings.TrimSuffix(de.Name(), ".stdout"), ".stderr")
		if !keep[base] {
			_ = os.Remove(filepath.Join(dir, de.Name()))
		}
	}
}

// fileBase names the instance's output files.
func (in *instance) fileBase() string {
	return fmt.Sprintf("%s_%s", in.rs.cfg.Load().Key.Namespace, in.name)
}
