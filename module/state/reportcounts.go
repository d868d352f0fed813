package state

// ReportCounts appends to out the counts the module reports this
// interval and returns it: every revision with requests held or in
// flight, every revision that must be reported while idle (ReportIdle:
// woken through DstCluster, which Envoy's stats do not show), and, once,
// with zeros, a revision that was reported the interval before and is
// idle now. active is the reporter's memory of the revisions reported
// last interval (keys of the table, so bounded by MaxRevisions); it is
// updated in place. Early is capped at InFlight (DecodeReport refuses
// more).
func (t *Table) ReportCounts(active map[string]bool, out []RevisionCounts) []RevisionCounts {
	// Only the listed revisions (reportlist.go), not the whole table.
	t.walkListed(true, func(r *Revision) {
		key, held, inFlight, early, reportIdle := r.Key, r.held.Load(), r.inFlight.Load(), r.early.Load(), r.ReportIdle()
		keep := held+inFlight > 0 || reportIdle
		if !keep && (len(active) == 0 || !active[key]) {
			return // no map lookup per idle revision while nothing is active
		}
		if keep {
			active[key] = true
		} else {
			delete(active, key)
		}
		out = append(out, RevisionCounts{Key: key, Held: held, InFlight: inFlight, Early: min(early, inFlight)})
	})
	return out
}
