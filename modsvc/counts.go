package modsvc

import (
	"sync"
	"time"

	"github.com/thaw-dev/thaw/module/state"
	"github.com/thaw-dev/thaw/revision"
)

// countsFresh is how long a node's last report counts for Counts: a few
// report intervals (1 s by default), so a module that stopped reporting
// (Envoy gone) drops out of `thaw status` within seconds.
const countsFresh = 5 * time.Second

// nodeCounts is one node's last report: held and in-flight requests per
// revision, at the time it arrived.
type nodeCounts struct {
	at   time.Time
	revs map[revision.Key][2]int64
}

// reported keeps each node's last reported counts for `thaw status` (the
// autoscaler takes the held counts as samples separately). Bounded: at
// most MaxNodes nodes (stale ones are dropped first), each with the
// revisions of one report (state.MaxReportBytes).
type reported struct {
	mu    sync.Mutex
	nodes map[string]nodeCounts
}

// set replaces node's counts with those of a report received at now.
func (r *reported) set(node string, now time.Time, revs []state.RevisionCounts) {
	m := make(map[revision.Key][2]int64, len(revs))
	for _, c := range revs {
		key, err := revision.ParseKey(c.Key)
		if err != nil || (c.Held == 0 && c.InFlight == 0) {
			continue
		}
		m[key] = [2]int64{c.Held, c.InFlight}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.nodes == nil {
		r.nodes = map[string]nodeCounts{}
	}
	if _, ok := r.nodes[node]; !ok && len(r.nodes) >= MaxNodes {
		for n, nc := range r.nodes {
			if now.Sub(nc.at) > countsFresh {
				delete(r.nodes, n)
			}
		}
		if len(r.nodes) >= MaxNodes {
			return
		}
	}
	r.nodes[node] = nodeCounts{at: now, revs: m}
}

// sum adds key's counts over the nodes that reported within countsFresh
// of now.
func (r *reported) sum(key revision.Key, now time.Time) (held, inFlight int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, nc := range r.nodes {
		if now.Sub(nc.at) > countsFresh {
			continue
		}
		c := nc.revs[key]
		held += int(c[0])
		inFlight += int(c[1])
	}
	return held, inFlight
}

// Counts returns revision key's requests held and in flight in the
// modules, summed over the Envoys that reported in the last 5 s (their
// last report each): what `thaw status` shows for the module path.
func (s *Server) Counts(key revision.Key) (held, inFlight int) {
	return s.reported.sum(key, s.now())
}

// now is Server.Now, or time.Now.
func (s *Server) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}
