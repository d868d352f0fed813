package harness

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// A thaw killed with SIGKILL (Thaw.Kill, a crash) leaves its backend
// processes running on purpose: each is the leader of a process group of
// its own, with no parent-death signal, so that a restarted thaw adopts
// them from the state file (platform/local/adopt.go). A test that kills
// thaw and never restarts it must then stop them itself, or they outlive
// the test with parent pid 1. stopLeftoverBackends does that from the same
// state file thaw wrote.

// Names in thaw local's state directory (platform/local/state.go).
const (
	localStateFile = "local-instances.json"
	localLockFile  = "local.lock"
)

// leftoverGone bounds the wait for a killed backend to disappear.
const leftoverGone = 5 * time.Second

// leftoverRecord is the part of a state file entry the harness needs.
type leftoverRecord struct {
	Revision   string `json:"revision"`
	Instance   string `json:"instance"`
	Pid        int    `json:"pid"`
	Pgid       int    `json:"pgid"`
	StartTicks uint64 `json:"startTicks"`
}

// stopLeftoverBackends sends SIGKILL to the process group of every backend
// recorded in stateDir's state file that is still the process thaw
// started (same pid, process group and start time), and waits up to 5 s
// for each to be gone. It does nothing while a live thaw holds the state
// directory's lock (those backends are that thaw's), or when there is no
// state file. It returns how many groups it killed.
func stopLeftoverBackends(logf func(string, ...any), stateDir string) int {
	if stateDirLocked(stateDir) {
		return 0
	}
	b, err := os.ReadFile(filepath.Join(stateDir, localStateFile))
	if err != nil {
		return 0
	}
	var f struct {
		Instances []leftoverRecord `json:"instances"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		logf("leftover backends: %s: %v", filepath.Join(stateDir, localStateFile), err)
		return 0
	}
	var killed []int
	for _, r := range f.Instances {
		if r.Pid <= 0 || r.Pgid != r.Pid || !recordedProcess(r) {
			continue
		}
		logf("stopping leftover backend %s (%s) pid %d", r.Instance, r.Revision, r.Pid)
		if err := syscall.Kill(-r.Pgid, syscall.SIGKILL); err == nil {
			killed = append(killed, r.Pid)
		}
	}
	deadline := time.Now().Add(leftoverGone)
	for _, pid := range killed {
		for procAlive(pid) && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
	}
	return len(killed)
}

// stateDirLocked reports whether another process holds the state
// directory's flock (a thaw running on it).
func stateDirLocked(stateDir string) bool {
	f, err := os.Open(filepath.Join(stateDir, localLockFile))
	if err != nil {
		return false
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return errors.Is(err, syscall.EWOULDBLOCK)
	}
	_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return false
}

// recordedProcess reports whether r.Pid is alive and is the process r
// records: its process group and start time (/proc/<pid>/stat) match.
func recordedProcess(r leftoverRecord) bool {
	state, pgid, start, err := procStatFields(r.Pid)
	return err == nil && state != "Z" && pgid == r.Pgid && start == r.StartTicks
}

// procAlive reports whether pid exists and is not a zombie.
func procAlive(pid int) bool {
	state, _, _, err := procStatFields(pid)
	return err == nil && state != "Z" && state != "X"
}

// procStatFields returns the state, process group and start time (clock
// ticks since boot) of pid from /proc/<pid>/stat.
func procStatFields(pid int) (state string, pgid int, start uint64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", 0, 0, err
	}
	// The command name (field 2) may hold spaces: count fields after ')'.
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 20 {
		return "", 0, 0, fmt.Errorf("pid %d: short /proc stat", pid)
	}
	pgid, err1 := strconv.Atoi(f[2])
	start, err2 := strconv.ParseUint(f[19], 10, 64)
	if err1 != nil || err2 != nil {
		return "", 0, 0, fmt.Errorf("pid %d: bad /proc stat", pid)
	}
	return f[0], pgid, start, nil
}
