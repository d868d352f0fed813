package local

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
)

// procStat is what adoption needs from /proc/<pid>/stat.
type procStat struct {
	state byte // R, S, D, Z, X, ...
	pgrp  int
	// startTicks is the process start time in clock ticks since boot. With
	// the boot id, pid and startTicks name one process for good: a reused
	// pid has a later start time.
	startTicks uint64
}

// errNoProcess means the pid does not exist, or names another process than
// the one recorded, or a zombie.
var errNoProcess = errors.New("process gone")

// readProcStat parses /proc/<pid>/stat. The command name (field 2) may hold
// spaces and parentheses, so fields are counted after its last ')'.
func readProcStat(pid int) (procStat, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return procStat{}, errNoProcess
		}
		return procStat{}, err
	}
	st, err := parseProcStat(b)
	if err != nil {
		return procStat{}, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	return st, nil
}

func parseProcStat(b []byte) (procStat, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}, errors.New("no command name")
	}
	// Fields from 3 (state) on; pgrp is field 5, starttime field 22.
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 || len(f[0]) != 1 {
		return procStat{}, fmt.Errorf("%d fields after the command name, want >= 20", len(f))
	}
	pgrp, err := strconv.Atoi(f[2])
	if err != nil {
		return procStat{}, fmt.Errorf("pgrp: %w", err)
	}
	start, err := strconv.ParseUint(f[19], 10, 64)
	if err != nil {
		return procStat{}, fmt.Errorf("starttime: %w", err)
	}
	return procStat{state: f[0][0], pgrp: pgrp, startTicks: start}, nil
}

// sameProcess reports whether pid is still the live (not zombie) process
// that started at startTicks. Only then may its process group be signalled:
// a zombie is exited, and a pid with another start time was reused.
func sameProcess(pid int, startTicks uint64) bool {
	st, err := readProcStat(pid)
	return err == nil && st.startTicks == startTicks && st.state != 'Z' && st.state != 'X'
}

// bootID identifies the current boot (start times are relative to it).
func bootID() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// verifyOwned checks that the live process e.Pid is the one thaw recorded:
// same boot, same start time, same process group, and either the recorded
// command line or (for commands that exec another program, such as sh -c
// "exec ...") the environment thaw gave it. It returns nil or why not.
func verifyOwned(e stateInstance, boot string) error {
	if e.Pid <= 0 || e.Pgid <= 0 || e.StartTicks == 0 {
		return errors.New("incomplete record")
	}
	if e.BootID != boot {
		return errors.New("recorded before a reboot")
	}
	st, err := readProcStat(e.Pid)
	switch {
	case err != nil:
		return err
	case st.state == 'Z' || st.state == 'X':
		return errNoProcess
	case st.startTicks != e.StartTicks:
		return fmt.Errorf("pid reused (start time %d, recorded %d)", st.startTicks, e.StartTicks)
	case st.pgrp != e.Pgid:
		return fmt.Errorf("process group %d, recorded %d", st.pgrp, e.Pgid)
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", e.Pid))
	if err != nil {
		return fmt.Errorf("read cmdline: %w", err)
	}
	if slices.Equal(splitNul(cmdline), e.Argv) {
		return nil
	}
	environ, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", e.Pid))
	if err != nil {
		return fmt.Errorf("command line differs; read environ: %w", err)
	}
	env := splitNul(environ)
	for _, want := range []string{
		"PORT=" + strconv.Itoa(int(e.Port)), "THAW_REVISION=" + e.Revision, "THAW_INSTANCE=" + e.Instance,
	} {
		// The last assignment of a name wins, as in getenv.
		name, _, _ := strings.Cut(want, "=")
		got := ""
		for _, kv := range env {
			if strings.HasPrefix(kv, name+"=") {
				got = kv
			}
		}
		if got != want {
			return fmt.Errorf("command line %q differs and environment has no %s", splitNul(cmdline), want)
		}
	}
	return nil
}

// splitNul splits NUL-terminated strings (/proc cmdline and environ).
func splitNul(b []byte) []string {
	b = bytes.TrimSuffix(b, []byte{0})
	if len(b) == 0 {
		return nil
	}
	return strings.Split(string(b), "\x00")
}
