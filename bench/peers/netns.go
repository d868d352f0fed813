package peers

import (
	"errors"
	"fmt"
	"os"
	"os/exec"

	"golang.org/x/sys/unix"
)

// netnsEnv marks the scenario process that runs inside the peers'
// namespaces.
const netnsEnv = "THAW_BENCH_PEERS_NETNS"

// InNetns reports whether this process is the one ReexecInNetns
// started.
func InNetns() bool { return os.Getenv(netnsEnv) == "1" }

// ReexecInNetns runs this program again, with the same arguments, in a new
// user, network and mount namespace (`unshare --user --map-root-user --net
// --mount`, unprivileged): a loopback of its own, so the peers' fixed ports
// (queue-proxy's admin and metrics servers, the interceptor's) and every
// other port of the scenario are private to it, and a hosts file can be
// bind-mounted for one process without touching the machine's. The child
// stays in this process's process group and session (one scheduler group
// for every process of the benchmark). It returns the child's exit error.
func ReexecInNetns() error {
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("peers: own executable: %w", err)
	}
	args := append([]string{"--user", "--map-root-user", "--net", "--mount", "--", self}, os.Args[1:]...)
	cmd := exec.Command("unshare", args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), netnsEnv+"=1")
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			return fmt.Errorf("peers: unshare (unprivileged user namespaces needed): %w", err)
		}
		return fmt.Errorf("peers: %w", err)
	}
	return nil
}

// LoopbackUp brings up the loopback interface of a fresh network namespace
// (down at creation).
func LoopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("loopback up: %w", err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return fmt.Errorf("loopback up: %w", err)
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("loopback up: %w", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("loopback up: %w", err)
	}
	return nil
}
