package local

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// The state file records exactly the running processes, found through
// p.running (not a walk over every revision): one per woken revision,
// none of the idle ones, an exited one dropped, and the file gone at a
// clean stop.
func TestStateRecordsRunningInstancesOnly(t *testing.T) {
	revs := []RevisionConfig{workloadRev(t, "a", nil), workloadRev(t, "b", nil)}
	for i := range 200 {
		revs = append(revs, workloadRev(t, fmt.Sprintf("idle%03d", i), nil))
	}
	stateDir := t.TempDir()
	h := startPlatform(t, configOf(revs...), func(o *Options) { o.StateDir = stateDir })
	a, b := revs[0].Key, revs[1].Key
	store := &stateStore{dir: stateDir}
	recorded := func() []string {
		t.Helper()
		got, err := store.load()
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, e := range got {
			names = append(names, e.Revision)
		}
		slices.Sort(names)
		return names
	}
	running := func() int {
		h.p.mu.Lock()
		defer h.p.mu.Unlock()
		return len(h.p.running)
	}
	waitRecorded := func(want ...string) {
		t.Helper()
		deadline := time.Now().Add(waitLimit)
		for !slices.Equal(recorded(), want) {
			if time.Now().After(deadline) {
				t.Fatalf("state file lists %v, want %v", recorded(), want)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}

	h.setScale(a, 1)
	h.setScale(b, 1)
	h.waitBackends(a, 1)
	h.waitBackends(b, 1)
	waitRecorded(a.String(), b.String())
	if n := running(); n != 2 {
		t.Errorf("%d running instances tracked, want 2", n)
	}

	h.setScale(a, 0)
	h.waitBackends(a, 0)
	waitRecorded(b.String())
	if n := running(); n != 1 {
		t.Errorf("%d running instances tracked after a's exit, want 1", n)
	}

	h.stop()
	if n := running(); n != 0 {
		t.Errorf("%d running instances tracked after the stop, want 0", n)
	}
	assertNoState(t, stateDir)
}
