package app

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/thaw-dev/thaw/xds/translate"
)

// FileBudget splits an Envoy's open-file limit between what the release
// path may use (docs/reliability.md, "Open files"). Every figure is a
// count of file descriptors of that one Envoy.
type FileBudget struct {
	// Limit is Envoy's open-file limit (RLIMIT_NOFILE, soft).
	Limit int
	// Reserve is kept for Envoy's own files: listeners, the admin port,
	// the xDS, ext_proc and stats connections, logs, event fds per worker.
	Reserve int
	// Connections bounds thaw_activator_dst's upstream connections
	// (translate.Config.ActivatorMaxConnections).
	Connections int
	// MaxHeld bounds the requests the activator holds at once
	// (activator.Options.MaxHeld): each held HTTP/1.1 request keeps one
	// client connection open in Envoy.
	MaxHeld int
}

// fileReserveMax is the most FileBudget keeps for Envoy's own files: an
// idle `thaw local` Envoy with 2 workers holds about 40 (measured with
// /proc/<pid>/fd), so 256 leaves room for more workers and admin clients.
const fileReserveMax = 256

// minFileLimit is the smallest open-file limit thaw local runs Envoy with:
// below it the budget leaves fewer than 64 held requests.
const minFileLimit = 256

// MinFileLimit is the smallest Envoy open-file limit thaw accepts (thaw
// local's --envoy-open-files, thaw run's --envoy-open-files).
const MinFileLimit = minFileLimit

// NewFileBudget splits limit: Reserve is min(256, limit/8); Connections
// is an eighth of the rest, at most translate.DefaultActivatorMaxConnections
// (connections are reused: 112 of them, at 50 ms per request, carry over
// 2,000 requests per second); MaxHeld is what remains. With 1024 open
// files that is 128, 112 and 784; with 20,000 it is 256, 2468 and 17,276.
func NewFileBudget(limit int) FileBudget {
	b := FileBudget{Limit: limit, Reserve: min(fileReserveMax, limit/8)}
	b.Connections = min(translate.DefaultActivatorMaxConnections, (limit-b.Reserve)/8)
	b.MaxHeld = limit - b.Reserve - b.Connections
	return b
}

// ErrFileLimit is wrapped by EnvoyFileLimit's errors about the limit
// asked for.
var ErrFileLimit = errors.New("envoy open-file limit")

// EnvoyFileLimit returns the open-file limit thaw local gives its Envoy:
// want, or when want is 0 the hard limit Envoy inherits from thaw. Go
// programs raise their own soft limit to the hard one at start but give
// their children the original soft limit, often 1024: without
// SetEnvoyFileLimit an Envoy started by thaw could hold fewer than 1024
// connections on a machine that allows many more. Errors wrap
// ErrFileLimit when want is below 256 or above the hard limit (only root
// may raise that: `ulimit -Hn`, or the container's nofile limit).
func EnvoyFileLimit(want int) (int, error) {
	var own unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &own); err != nil {
		return 0, fmt.Errorf("read the open-file limit: %w", err)
	}
	switch {
	case want < 0 || (want > 0 && want < minFileLimit):
		return 0, fmt.Errorf("%w: %d is below %d", ErrFileLimit, want, minFileLimit)
	case want > 0 && uint64(want) > own.Max:
		return 0, fmt.Errorf("%w: %d is above the hard limit %d (raise it with `ulimit -Hn` as root, or the container's nofile limit)",
			ErrFileLimit, want, own.Max)
	case want > 0:
		return want, nil
	}
	if own.Max < minFileLimit {
		return 0, fmt.Errorf("%w: the hard limit %d is below %d (raise it with `ulimit -Hn` as root, or the container's nofile limit)",
			ErrFileLimit, own.Max, minFileLimit)
	}
	return clampInt(own.Max), nil
}

// SetEnvoyFileLimit sets the soft open-file limit (RLIMIT_NOFILE) of the
// Envoy process pid to limit (EnvoyFileLimit's answer), keeping its hard
// limit. Errors: the prlimit(2) error, wrapped.
func SetEnvoyFileLimit(pid, limit int) error {
	var cur unix.Rlimit
	if err := unix.Prlimit(pid, unix.RLIMIT_NOFILE, nil, &cur); err != nil {
		return fmt.Errorf("read envoy (pid %d) open-file limit: %w", pid, err)
	}
	if cur.Cur == uint64(limit) {
		return nil
	}
	set := unix.Rlimit{Cur: uint64(limit), Max: max(cur.Max, uint64(limit))}
	if err := unix.Prlimit(pid, unix.RLIMIT_NOFILE, &set, nil); err != nil {
		return fmt.Errorf("set envoy (pid %d) open-file limit to %d: %w", pid, limit, err)
	}
	return nil
}

// clampInt converts a limit to int, RLIM_INFINITY to the largest int.
func clampInt(v uint64) int {
	const maxInt = int(^uint(0) >> 1)
	if v > uint64(maxInt) {
		return maxInt
	}
	return int(v)
}
