package startgc

import (
	"bufio"
	"bytes"
	"math"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"

	"go.uber.org/zap"
)

// Percent is the GOGC in force while thaw starts: the heap may grow to
// five times what the last collection left before the next one.
const Percent = 400

// Settings are what the start-up GC would change and what bounds it.
type Settings struct {
	// Getenv reads the environment (os.Getenv).
	Getenv func(string) string
	// MemoryBytes is the memory the process may use (0: unknown, no bound
	// and no raise); Memory() reads it.
	MemoryBytes int64
}

// Start is the start-up GC in force; Restore ends it.
type Start struct {
	log     *zap.Logger
	once    sync.Once
	active  bool
	percent int   // GOGC before
	limit   int64 // memory limit before
}

// Raise sets GOGC to Percent and a soft memory limit of half of
// s.MemoryBytes, unless GOGC or GOMEMLIMIT is set in the environment (the
// user's choice stands) or the memory is unknown. It logs what it did.
func Raise(log *zap.Logger, s Settings) *Start {
	st := &Start{log: log}
	for _, v := range []string{"GOGC", "GOMEMLIMIT"} {
		if s.Getenv(v) != "" {
			log.Info("start-up GC unchanged: "+v+" is set", zap.String(v, s.Getenv(v)))
			return st
		}
	}
	if s.MemoryBytes <= 0 {
		log.Info("start-up GC unchanged: the memory available is unknown")
		return st
	}
	ceiling := s.MemoryBytes / 2
	st.active = true
	st.percent = debug.SetGCPercent(Percent)
	st.limit = debug.SetMemoryLimit(ceiling)
	log.Info("start-up GC: GOGC raised until ready (set GOGC to keep your own)",
		zap.Int("gogc", Percent), zap.Int("gogcAfter", st.percent), zap.Int64("ceilingMiB", ceiling>>20))
	return st
}

// Restore puts back the GOGC and memory limit Raise found; reason is
// logged. Only the first call does anything; Restore on a Start that
// changed nothing, or on a nil Start, is a no-op.
func (st *Start) Restore(reason string) {
	if st == nil {
		return
	}
	st.once.Do(func() {
		if !st.active {
			return
		}
		debug.SetGCPercent(st.percent)
		debug.SetMemoryLimit(st.limit)
		st.log.Info("start-up GC restored", zap.String("reason", reason), zap.Int("gogc", st.percent))
	})
}

// Memory is the memory this process may use in bytes: MemTotal from
// /proc/meminfo, or the cgroup v2 memory.max when lower; 0 when neither
// can be read.
func Memory() int64 {
	total := memTotal("/proc/meminfo")
	if b, err := os.ReadFile("/sys/fs/cgroup/memory.max"); err == nil {
		if n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil && n > 0 && (total == 0 || n < total) {
			total = n
		}
	}
	return total
}

// memTotal reads MemTotal (kB) from a meminfo file, in bytes; 0 when it
// cannot.
func memTotal(path string) int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:")
		if !ok {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
		if err != nil || kb <= 0 || kb > math.MaxInt64>>10 {
			return 0
		}
		return kb << 10
	}
	return 0
}
