package local

import (
	"context"
	"errors"
	"os"
	"reflect"
	"time"

	"go.uber.org/zap"
	"k8s.io/utils/clock"

	"github.com/thaw-dev/thaw/revision"
)

// DefaultWatchInterval is how often Watch checks the file for changes.
const DefaultWatchInterval = time.Second

// ReloadResult says what a Reload changed.
type ReloadResult struct {
	Added, Changed, Removed []revision.Key
	// Kept are revisions whose new entry is invalid: their last good
	// configuration keeps serving.
	Kept []revision.Key
}

// reloadErrors is why the latest version of the file was not applied:
// whole (file) or per revision (kept with its last good entry).
type reloadErrors struct {
	file string
	revs map[revision.Key]string
}

func (e reloadErrors) of(key revision.Key) string {
	msg := e.revs[key]
	if e.file != "" {
		msg = joinErr(msg, "config file not applied, last good configuration serving: "+e.file)
	}
	return msg
}

func joinErr(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	default:
		return a + "; " + b
	}
}

// Reload applies a new parse of the file while the platform runs:
//   - a new revision is published and started like one of the first file;
//   - a changed revision whose processes are configured the same (command,
//     working directory, env, readiness, stop timeout) only gets its new
//     Spec: its processes keep running and its held requests stay held;
//     one whose processes changed has them replaced (new ones start at the
//     current scale while the old ones drain; requests meanwhile are held);
//   - a removed revision leaves the registry and its processes drain;
//   - a revision whose new entry is invalid keeps its last good entry, and
//     the problem is reported by RevisionError (`thaw status`) until a
//     later file fixes it; a new invalid revision is published as invalid.
//
// It returns an error, and changes nothing, before Run started or after it
// returned.
func (p *Platform) Reload(cfg *Config) (ReloadResult, error) {
	var res ReloadResult
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.runCtx == nil || p.closed {
		return res, ErrNotRunning
	}
	reg := p.opts.Registry
	old := p.revMap()
	next := make(map[revision.Key]*processGroup, len(cfg.Revisions)+len(cfg.Invalid))
	errs := reloadErrors{revs: map[revision.Key]string{}}
	for i := range cfg.Revisions {
		rc := &cfg.Revisions[i]
		rs := old[rc.Key]
		if rs == nil {
			rs = newRevState(rc, p.log)
			next[rc.Key] = rs
			reg.Upsert(rc.Key, rc.Spec)
			reg.SetBackends(rc.Key, nil)
			res.Added = append(res.Added, rc.Key)
			continue
		}
		next[rc.Key] = rs
		prev := rs.cfg.Load()
		if sameProcesses(prev, rc) {
			if !reflect.DeepEqual(prev.Spec, rc.Spec) {
				res.Changed = append(res.Changed, rc.Key)
			}
			rs.cfg.Store(rc)
			reg.Upsert(rc.Key, rc.Spec)
			continue
		}
		res.Changed = append(res.Changed, rc.Key)
		rs.cfg.Store(rc)
		rs.fingerprint = configFingerprint(*rc)
		reg.Upsert(rc.Key, rc.Spec)
		for _, in := range rs.instances {
			if !in.stopping {
				in.stopping = true
				close(in.stop)
			}
		}
		p.publishLocked(rs)
		p.reconcileLocked(rs, nil)
		rs.log().Info("processes replaced: their configuration changed", zap.Int32("scale", rs.desired))
	}
	for key, err := range cfg.Invalid {
		if rs := old[key]; rs != nil {
			next[key] = rs // the last good entry keeps serving
			errs.revs[key] = err.Error()
			res.Kept = append(res.Kept, key)
			continue
		}
		reg.SetInvalid(key, err)
	}
	for key, rs := range old {
		if next[key] != nil {
			continue
		}
		if _, invalid := cfg.Invalid[key]; invalid {
			continue
		}
		rs.removed = true
		reg.Delete(key)
		rs.desired = 0
		p.reconcileLocked(rs, nil)
		rs.storeScaleLocked()
		res.Removed = append(res.Removed, key)
	}
	// A revision invalid before and now gone or fixed is no longer listed
	// as invalid.
	if p.current != nil {
		for key := range p.current.Invalid {
			_, stillInvalid := cfg.Invalid[key]
			if !stillInvalid && next[key] == nil {
				reg.Delete(key)
			}
		}
	}
	p.revs.Store(&next)
	p.current, p.reloadErr = cfg, errs
	for _, rs := range res.addedStates(next) {
		p.reconcileLocked(rs, nil)
	}
	p.saveStateLocked()
	return res, nil
}

func (r ReloadResult) addedStates(m map[revision.Key]*processGroup) []*processGroup {
	out := make([]*processGroup, 0, len(r.Added))
	for _, k := range r.Added {
		out = append(out, m[k])
	}
	return out
}

// sameProcesses reports whether a and b run the same processes.
func sameProcesses(a, b *RevisionConfig) bool {
	return configFingerprint(*a) == configFingerprint(*b) && a.Readiness == b.Readiness && a.StopTimeout == b.StopTimeout
}

// setFileError records that the file's latest version could not be read or
// parsed (nil: clear it).
func (p *Platform) setFileError(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err == nil {
		p.reloadErr.file = ""
		return
	}
	p.reloadErr.file = err.Error()
}

// Watch checks the file at path every interval (clock ticks) and applies
// each new version with load and Reload until ctx ends. A version that
// cannot be read or parsed is logged and reported by RevisionError for
// every revision, and the last good configuration keeps serving; each
// rejected revision is logged. Renames and in-place writes are both seen:
// the file's content is compared, hashed when a stat says it may have
// changed and at least every ContentCheckEvery (fileCheck).
func (p *Platform) Watch(ctx context.Context, path string, interval time.Duration, clk clock.WithTicker,
	load func() (*Config, error)) {
	if interval <= 0 {
		interval = DefaultWatchInterval
	}
	log := p.log.With(zap.String("file", path))
	files := newFileCheck(path, ContentCheckEvery)
	last, _, _ := files.check(clk.Now())
	tick := clk.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C():
		}
		sum, _, err := files.check(clk.Now())
		if err != nil {
			if !errors.Is(err, os.ErrNotExist) || last != ([32]byte{}) {
				log.Error("config file unreadable: last good configuration keeps serving", zap.Error(err))
				p.setFileError(err)
			}
			last = [32]byte{}
			continue
		}
		if sum == last {
			continue
		}
		last = sum
		cfg, err := load()
		if err != nil {
			log.Error("config file invalid: last good configuration keeps serving", zap.Error(err))
			p.setFileError(err)
			continue
		}
		p.setFileError(nil)
		res, err := p.Reload(cfg)
		if err != nil {
			if p.isClosed() {
				return
			}
			last = [32]byte{} // not running yet: try again next tick
			continue
		}
		for _, e := range cfg.Errors {
			log.Error("invalid revision in reloaded file", zap.Error(e))
		}
		log.Info("config file reloaded", zap.Stringers("added", res.Added), zap.Stringers("changed", res.Changed),
			zap.Stringers("removed", res.Removed), zap.Stringers("keptLastGood", res.Kept))
	}
}

func (p *Platform) isClosed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.closed
}
