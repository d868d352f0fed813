package app

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
)

// emfile is how Envoy's log spells EMFILE (strerror): "socket(2) failed,
// got error: Too many open files" for an upstream connection, "accept"
// errors for a client's.
var emfile = []byte("Too many open files")

// FileWatchOptions configures WatchEnvoyFiles.
type FileWatchOptions struct {
	Logger *zap.Logger
	// LogPath is Envoy's log file (--log-path).
	LogPath string
	// Pid is Envoy's process id (to count its open files when it ran out).
	Pid int
	// Limit is Envoy's open-file limit, as SetEnvoyFileLimit returned it.
	Limit int
	// Every is how often the log is read (default 1 s).
	Every time.Duration
	// Registerer registers thaw_envoy_open_files_limit and
	// thaw_envoy_open_files_exhausted_total (nil: not registered).
	Registerer prometheus.Registerer
}

// FileWatch reports an Envoy that ran out of file descriptors: Envoy only
// logs it, in its own log file, and fails the connection it was opening.
type FileWatch struct {
	opts      FileWatchOptions
	exhausted prometheus.Counter
	limit     prometheus.Gauge
	offset    int64
	lastLog   time.Time
	pending   int
}

// fileWatchLogEvery bounds the watch's own log: one line per period, with
// the count of Envoy's complaints since the last.
const fileWatchLogEvery = 10 * time.Second

// NewFileWatch returns a FileWatch that starts reading LogPath at its
// current end (older complaints were reported by an earlier thaw).
func NewFileWatch(o FileWatchOptions) (*FileWatch, error) {
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	if o.Every <= 0 {
		o.Every = time.Second
	}
	w := &FileWatch{opts: o,
		exhausted: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "thaw", Subsystem: "envoy", Name: "open_files_exhausted_total",
			Help: "Lines of Envoy's log saying it ran out of file descriptors (EMFILE, \"Too many open files\"): " +
				"each is a connection Envoy could not open or accept. Raise Envoy's open-file limit.",
		}),
		limit: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "thaw", Subsystem: "envoy", Name: "open_files_limit",
			Help: "Envoy's open-file limit (RLIMIT_NOFILE) as thaw local set it.",
		}),
	}
	w.limit.Set(float64(o.Limit))
	if st, err := os.Stat(o.LogPath); err == nil {
		w.offset = st.Size()
	}
	if o.Registerer != nil {
		if err := errors.Join(o.Registerer.Register(w.exhausted), o.Registerer.Register(w.limit)); err != nil {
			return nil, fmt.Errorf("envoy file watch metrics: %w", err)
		}
	}
	return w, nil
}

// Run reads the new part of Envoy's log every period until ctx ends.
func (w *FileWatch) Run(ctx context.Context) {
	t := time.NewTicker(w.opts.Every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			w.Check(now)
		}
	}
}

// maxReadPerCheck bounds what one Check reads from the log (bytes); the
// rest is read by the next checks.
const maxReadPerCheck = 4 << 20

// Check reads what Envoy appended to its log since the last call, counts
// its EMFILE complaints and, at most once per 10 s, logs them with Envoy's
// limit, how many files it has open, and what to change.
func (w *FileWatch) Check(now time.Time) {
	n := w.scan()
	w.pending += n
	if w.pending == 0 || (!w.lastLog.IsZero() && now.Sub(w.lastLog) < fileWatchLogEvery) {
		return
	}
	w.opts.Logger.Error("envoy ran out of file descriptors: connections failed (clients saw 503 upstream connect errors or resets); "+
		"raise Envoy's open-file limit: `ulimit -n` (and -Hn) before thaw local, --envoy-open-files, or the container's nofile limit",
		zap.Int("limit", w.opts.Limit), zap.Int("open", openFiles(w.opts.Pid)), zap.Int("complaints", w.pending),
		zap.String("envoyLog", w.opts.LogPath))
	w.pending, w.lastLog = 0, now
}

// scan returns how many complaints the log gained since the last scan.
func (w *FileWatch) scan() int {
	f, err := os.Open(w.opts.LogPath)
	if err != nil {
		return 0
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() < w.offset {
		w.offset = 0 // truncated or replaced
	}
	buf, err := io.ReadAll(io.LimitReader(io.NewSectionReader(f, w.offset, maxReadPerCheck), maxReadPerCheck))
	if err != nil {
		return 0
	}
	// Count whole lines only; a line still being written is read next time.
	if i := bytes.LastIndexByte(buf, '\n'); i >= 0 {
		buf = buf[:i+1]
	} else {
		buf = buf[:0]
	}
	w.offset += int64(len(buf))
	n := bytes.Count(buf, emfile)
	w.exhausted.Add(float64(n))
	return n
}

// openFiles counts pid's open file descriptors (-1 when unknown).
func openFiles(pid int) int {
	d, err := os.Open(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return -1
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return -1
	}
	return len(names)
}
