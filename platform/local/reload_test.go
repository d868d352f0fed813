package local

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"go.uber.org/zap/zaptest"

	"github.com/thaw-dev/thaw/revision"
)

// TestReload: a reload adds a revision, changes one's Spec without touching
// its running process, replaces the process of one whose command changed,
// removes one, and keeps the last good entry of one made invalid.
func TestReload(t *testing.T) {
	keep := workloadRev(t, "keep", nil)
	proc := workloadRev(t, "proc", nil)
	gone := workloadRev(t, "gone", nil)
	broken := workloadRev(t, "broken", nil)
	h := startPlatform(t, configOf(keep, proc, gone, broken), nil)
	h.setScale(keep.Key, 1)
	h.setScale(proc.Key, 1)
	keepPid := getStats(t, h.waitBackends(keep.Key, 1)[0]).Pid
	procPid := getStats(t, h.waitBackends(proc.Key, 1)[0]).Pid

	keep2 := keep
	keep2.Spec.Target = 7
	proc2 := proc
	proc2.Env = map[string]string{"BODY": "new"}
	added := workloadRev(t, "added", nil)
	cfg := configOf(keep2, proc2, added)
	cfg.Invalid[broken.Key] = errors.New("f.yaml: revision local/broken: target: nope")
	res, err := h.p.Reload(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Added, []revision.Key{added.Key}) || !slices.Equal(res.Removed, []revision.Key{gone.Key}) ||
		!slices.Equal(res.Kept, []revision.Key{broken.Key}) || len(res.Changed) != 2 {
		t.Fatalf("Reload = %+v", res)
	}
	s := h.waitSnapshot("spec applied", func(s *revision.Snapshot) bool {
		r := s.Get(keep.Key)
		return r != nil && r.Spec.Target == 7
	})
	if s.Get(gone.Key) != nil || s.Get(added.Key) == nil || s.Get(broken.Key) == nil {
		t.Fatalf("after reload: gone %v, added %v, broken %v", s.Get(gone.Key), s.Get(added.Key), s.Get(broken.Key))
	}
	if got := getStats(t, h.waitBackends(keep.Key, 1)[0]).Pid; got != keepPid {
		t.Fatalf("spec-only change restarted the process: pid %d, was %d", got, keepPid)
	}
	h.waitSnapshot("process replaced", func(s *revision.Snapshot) bool {
		r := s.Get(proc.Key)
		return r != nil && len(r.ReadyBackends()) == 1 && getStats(t, r.ReadyBackends()[0]).Pid != procPid
	})
	if msg := h.p.RevisionError(broken.Key); !strings.Contains(msg, "target: nope") {
		t.Fatalf("RevisionError(broken) = %q, want the reload error", msg)
	}
	if _, _, err := h.p.GetScale(context.Background(), gone.Key); err == nil {
		t.Fatal("GetScale of a removed revision: want ErrNotFound")
	}
	h.setScale(added.Key, 1)
	h.waitBackends(added.Key, 1)

	// A later file that fixes the broken entry clears the error.
	if _, err := h.p.Reload(configOf(keep2, proc2, added, broken)); err != nil {
		t.Fatal(err)
	}
	if msg := h.p.RevisionError(broken.Key); msg != "" {
		t.Fatalf("RevisionError(broken) after the fix = %q", msg)
	}
}

func TestReloadBeforeRun(t *testing.T) {
	rev := workloadRev(t, "a", nil)
	p := New(Options{Logger: zaptest.NewLogger(t), Registry: revision.NewRegistry(revision.RegistryOptions{}), Config: configOf(rev)})
	if _, err := p.Reload(configOf(rev)); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("Reload before Run: %v, want ErrNotRunning", err)
	}
}
