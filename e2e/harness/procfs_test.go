package harness

import (
	"os"
	"os/exec"
	"testing"
)

func TestProcReadings(t *testing.T) {
	self := os.Getpid()
	// Burn some CPU (tens of ms) so both clocks have moved past zero.
	sink := 0
	for i := range 50_000_000 {
		sink += i % 7
	}
	_ = sink
	sched, err := CPUTime(self)
	if err != nil || sched <= 0 {
		t.Fatalf("CPUTime(self) = %v, %v; want > 0", sched, err)
	}
	stat, err := StatCPUTime(self)
	if err != nil {
		t.Fatalf("StatCPUTime(self): %v", err)
	}
	if stat%clockTick != 0 {
		t.Errorf("StatCPUTime(self) = %v, not whole clock ticks", stat)
	}
	rss, err := RSS(self)
	if err != nil || rss < 1<<20 {
		t.Fatalf("RSS(self) = %d, %v; want at least 1 MiB", rss, err)
	}
	hwm, err := StatusBytes(self, "VmHWM")
	if err != nil || hwm < rss {
		t.Errorf("VmHWM %d (%v) below VmRSS %d", hwm, err, rss)
	}
	if _, err := StatusBytes(self, "NoSuchField"); err == nil {
		t.Error("StatusBytes of a missing field: no error")
	}

	// A process that is gone: every reading fails.
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatalf("run true: %v", err)
	}
	gone := cmd.Process.Pid
	if _, err := StatCPUTime(gone); err == nil {
		t.Errorf("StatCPUTime of exited pid %d: no error", gone)
	}
	if _, err := CPUTime(gone); err == nil {
		t.Errorf("CPUTime of exited pid %d: no error", gone)
	}
	if _, err := RSS(gone); err == nil {
		t.Errorf("RSS of exited pid %d: no error", gone)
	}
}
