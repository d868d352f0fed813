package wake

import (
	"time"
	_ "time/tzdata" // window time zones must load on hosts without a zoneinfo database

	"github.com/robfig/cron/v3"
)

// Window is a compiled WindowConfig.
type Window struct {
	Name string
	// Start is the cron expression, as written.
	Start string
	// Duration is how long the window stays open after each start.
	Duration time.Duration
	// TimeZone is the IANA name the expression is read in.
	TimeZone string
	// MinScale is the minimum replica count while the window is open.
	MinScale int32
	sched    cron.Schedule
	loc      *time.Location
}

// OpenAt returns the time the window last opened and true when it is open
// at now (a start within (now-Duration, now]), or false.
func (w *Window) OpenAt(now time.Time) (time.Time, bool) {
	// Next returns the first activation strictly after its argument: the
	// first start after now-Duration is the one that covers now, if any.
	from := now.In(w.loc).Add(-w.Duration)
	start := w.sched.Next(from)
	if start.IsZero() || start.After(now) {
		return time.Time{}, false
	}
	return start, true
}

// ActiveWindow is an open window at some time.
type ActiveWindow struct {
	Name     string
	MinScale int32
	// Until is when the window closes (unless it opens again by then).
	Until time.Time
}

// Active returns the open window with the highest MinScale at now (ties:
// the first listed), and false when none is open. A nil policy has none.
func (p *Policy) Active(now time.Time) (ActiveWindow, bool) {
	if p == nil {
		return ActiveWindow{}, false
	}
	var best ActiveWindow
	found := false
	for i := range p.Windows {
		w := &p.Windows[i]
		start, open := w.OpenAt(now)
		if !open || (found && w.MinScale <= best.MinScale) {
			continue
		}
		best, found = ActiveWindow{Name: w.Name, MinScale: w.MinScale, Until: start.Add(w.Duration)}, true
	}
	return best, found
}

// MinScaleAt returns the minimum scale the windows require at now (0 when
// none is open or the policy is nil).
func (p *Policy) MinScaleAt(now time.Time) int32 {
	a, ok := p.Active(now)
	if !ok {
		return 0
	}
	return a.MinScale
}

// NextChange returns the next time after now a window opens or closes
// (zero time when the policy has no windows), so a decision loop that
// sleeps while a revision is idle can wake up for it.
func (p *Policy) NextChange(now time.Time) time.Time {
	if p == nil {
		return time.Time{}
	}
	var next time.Time
	earliest := func(t time.Time) {
		if !t.IsZero() && t.After(now) && (next.IsZero() || t.Before(next)) {
			next = t
		}
	}
	for i := range p.Windows {
		w := &p.Windows[i]
		earliest(w.sched.Next(now.In(w.loc)))
		if start, open := w.OpenAt(now); open {
			earliest(start.Add(w.Duration))
		}
	}
	return next
}
