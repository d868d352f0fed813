package local

import (
	"strings"
	"testing"
)

// TestCrashLoopLastError: a crash-looping revision explains itself: exit
// status, how many crashes in a row and the end of its stderr.
func TestCrashLoopLastError(t *testing.T) {
	rev := workloadRev(t, "crashy", nil)
	rev.Command = []string{"sh", "-c", "echo on-stdout; echo 'config: bad' >&2; echo 'giving up' >&2; exit 3"}
	h := startPlatform(t, configOf(rev), nil)
	if got := h.p.RevisionError(rev.Key); got != "" {
		t.Fatalf("RevisionError before start = %q", got)
	}

	h.setScale(rev.Key, 1)
	h.waitLogs("process exited; restarting", 2) // the first crash is recorded by now
	got := h.p.RevisionError(rev.Key)
	for _, want := range []string{"crashy-1: exit status 3 (", " in a row; restarting in ", "stderr: config: bad | giving up"} {
		if !strings.Contains(got, want) {
			t.Errorf("RevisionError = %q, want it to contain %q", got, want)
		}
	}
	if strings.Contains(got, "on-stdout") {
		t.Errorf("RevisionError = %q quotes stdout", got)
	}
}

// TestLastErrorClearedWhenReady: once the failing instance becomes ready the
// error is gone.
func TestLastErrorClearedWhenReady(t *testing.T) {
	rev := workloadRev(t, "flaky", nil)
	rev.Command = []string{"sh", "-c", `if [ -e started ]; then exec "$0" --port "$1"; fi; touch started; echo once >&2; exit 4`,
		workloadBin, PortPlaceholder}
	h := startPlatform(t, configOf(rev), nil)

	h.setScale(rev.Key, 1)
	h.waitLogs("process exited; restarting", 1)
	h.waitBackends(rev.Key, 1)
	if got := h.p.RevisionError(rev.Key); got != "" {
		t.Errorf("RevisionError after the instance became ready = %q, want none", got)
	}
}

func TestLineTail(t *testing.T) {
	var tl lineTail
	for _, l := range []string{"a", "", "  b  ", "c", "d", strings.Repeat("x", 300)} {
		tl.add(l)
	}
	if got, want := tl.String(), "c | d | "+strings.Repeat("x", tailLineBytes)+"…"; got != want {
		t.Errorf("tail = %q, want %q", got, want)
	}
	var none *lineTail
	none.add("x")
	if none.String() != "" {
		t.Error("nil tail kept a line")
	}
}
