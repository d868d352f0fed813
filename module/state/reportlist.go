package state

import (
	"sync"
	"sync/atomic"
)

// The reporter's list: the revisions with something to report.
//
// Each report interval the module's reporter sends thaw the held and
// in-flight counts of the revisions that have any (and one last zero when
// they go idle) and the wake answers since the last report. Walking every
// revision for that cost an idle Envoy ~24 ms of CPU per second at
// 100,000 revisions (BenchmarkReportWalk100k; docs/scaling.md). Instead a
// revision lists itself when it starts holding a request, takes its first
// slot, or answers a request with its wake policy (markActive, on the
// request path: one atomic load when already listed, a CAS push onto a
// lock-free stack otherwise), and the reporter (ReportCounts, then
// WakeCounts) visits only the listed ones; ReportCounts unlists those with
// nothing left to report (no requests, not ReportIdle, no wake answers
// pending). The walk then costs what is active, not what exists.
//
// Invariant: r.listed is true exactly while r is on the stack or in the
// reporter's list, and then it is on exactly one of them once.

// reportLinks is a Revision's place on the reporter's list.
type reportLinks struct {
	listed atomic.Bool
	// next links the stack of newly listed revisions; written by the
	// pusher before the CAS that publishes it, read by the reporter after
	// the Swap that takes the stack.
	next *Revision
}

// reportList is the Table's side: the stack pushed by the request path and
// the reporter's own list.
type reportList struct {
	pushed atomic.Pointer[Revision]
	// mu serializes the walks: there is one reporter per state stream,
	// and two only while a filter configuration naming another stream
	// replaces the old one (module/activator conn.go).
	mu        sync.Mutex
	reporting []*Revision // under mu
}

// markActive lists r for the reporter unless it already is. Lock-free;
// called after the count or wake answer it reports was updated, so a
// reporter that unlists r concurrently either sees the update in its
// recheck or r is pushed again here.
func (r *Revision) markActive() {
	if r.report.listed.Load() || !r.report.listed.CompareAndSwap(false, true) {
		return
	}
	for {
		h := r.t.report.pushed.Load()
		r.report.next = h
		if r.t.report.pushed.CompareAndSwap(h, r) {
			return
		}
	}
}

// pendingReport reports whether r has something the reporter must still
// send: held or in-flight requests, counts to report while idle
// (ReportIdle, early.go), or wake answers not yet reported.
func (r *Revision) pendingReport() bool {
	if r.held.Load()+r.inFlight.Load() > 0 || r.ReportIdle() {
		return true
	}
	ws := r.wake.Load()
	if ws == nil || ws.pol == nil {
		return false
	}
	for i := range ws.answered {
		if ws.answered[i].Load() != ws.reported[i] {
			return true
		}
	}
	return false
}

// walkListed calls fn for every listed revision (taking the newly pushed
// ones first). With unlist, a revision with nothing pending after fn is
// unlisted: a request (or wake answer) that came after fn's loads either
// saw listed true before the Store and left r here, which the recheck
// sees, or sees false and pushes r itself. Serialized by l.mu.
func (t *Table) walkListed(unlist bool, fn func(r *Revision)) {
	l := &t.report
	l.mu.Lock()
	defer l.mu.Unlock()
	for r := l.pushed.Swap(nil); r != nil; {
		next := r.report.next
		r.report.next = nil
		l.reporting = append(l.reporting, r)
		r = next
	}
	keep := l.reporting[:0]
	for _, r := range l.reporting {
		fn(r)
		if !unlist || r.pendingReport() {
			keep = append(keep, r)
			continue
		}
		r.report.listed.Store(false)
		if r.pendingReport() && r.report.listed.CompareAndSwap(false, true) {
			keep = append(keep, r)
		}
	}
	clear(l.reporting[len(keep):])
	l.reporting = keep
}

// appendWakeCounts appends r's wake answers since its last report (non-zero
// deltas only) and marks them reported. Reporter only.
func (r *Revision) appendWakeCounts(out []WakeCount) []WakeCount {
	ws := r.wake.Load()
	if ws == nil || ws.pol == nil {
		return out
	}
	for i := range ws.answered {
		n := ws.answered[i].Load()
		if d := n - ws.reported[i]; d > 0 {
			ws.reported[i] = n
			c := WakeCount{Key: r.Key, Count: d}
			if i < len(ws.pol.Rules) {
				c.Rule = ws.pol.Rules[i].Name
			} else {
				c.Page = true
			}
			out = append(out, c)
		}
	}
	return out
}
