package activator

import (
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/thaw-dev/thaw/revision"
)

// SetMaxHeld changes the bound on requests held at once over all revisions
// (Options.MaxHeld; 0 or less: no bound). Requests already held keep
// waiting; only new holds are refused past it. Safe for concurrent use.
func (a *Activator) SetMaxHeld(n int) { a.maxHeld.Store(int64(max(n, 0))) }

// MaxHeld returns the bound SetMaxHeld or Options.MaxHeld set (0: none).
func (a *Activator) MaxHeld() int { return int(a.maxHeld.Load()) }

// limitLogEvery is how often refusals at the held-request limit are
// logged: one line per period with the count since the last, so a burst
// of refusals costs one log line, not one per request.
const limitLogEvery = 10 * time.Second

// limitLog rate-limits the log of held-limit refusals. Refusals are rare
// (the machine is at its limit), so a mutex is cheap enough here.
type limitLog struct {
	mu      sync.Mutex
	last    time.Time
	pending int
}

// refused counts one refusal and logs, at most once per limitLogEvery, how
// many were refused, the limit and what to change.
func (l *limitLog) refused(log *zap.Logger, key revision.Key, limit int64, now time.Time) {
	l.mu.Lock()
	l.pending++
	if !l.last.IsZero() && now.Sub(l.last) < limitLogEvery {
		l.mu.Unlock()
		return
	}
	n := l.pending
	l.pending, l.last = 0, now
	l.mu.Unlock()
	log.Warn("refusing requests with 503: the activator holds as many requests as Envoy's open-file limit allows; "+
		"raise Envoy's open-file limit (ulimit -n before thaw local; in Kubernetes the Envoy container's nofile limit, "+
		"then thaw run's --envoy-open-files, or --max-held)",
		zap.String("revision", key.String()), zap.Int64("maxHeld", limit), zap.Int("refused", n))
}
