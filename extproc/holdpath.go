package extproc

import (
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/thaw-dev/thaw/autoscaler"
	"github.com/thaw-dev/thaw/revision"
)

// HoldPathMetadata is the gRPC metadata key that marks an ext_proc stream
// as coming through the hold listener (thaw_hold, issue 28): the listener
// that idle revisions' routes reach through the shared hold clusters.
// Envoy sets it from the listener's configuration (the ext_proc filter's
// grpc_service initial_metadata), so a client can never set it.
//
// Why it matters: a request that reaches the activator through a
// revision's own cluster counts in that cluster's upstream_rq_active and
// upstream_rq_total, which the autoscaler reads from Envoy's stats. A
// request held for an idle revision went through a shared hold cluster
// instead and counts in no revision's stats, so the server counts it
// itself (HoldPathReporter) while its stream lasts.
const HoldPathMetadata = "x-thaw-hold-path"

// maxHoldPathRevisions bounds the revisions counted at once; a request for
// one more is still served, only not counted (it still pokes).
const maxHoldPathRevisions = 1 << 18

// holdPath counts the hold-path requests in flight and arrived per
// revision. It is on the hold path only (a request for an idle revision),
// never on the warm path, so one mutex is enough.
type holdPath struct {
	mu sync.Mutex
	m  map[revision.Key]*holdCount
}

type holdCount struct {
	// active is the hold-path requests whose stream is open.
	active int
	// arrived is the requests that started since the last report.
	arrived int
	// zeroSent is true once a report said 0 in flight, 0 arrived.
	zeroSent bool
}

// fromHoldPath reports whether the stream came through the hold listener.
func fromHoldPath(stream grpc.ServerStream) bool {
	return len(metadata.ValueFromIncomingContext(stream.Context(), HoldPathMetadata)) > 0
}

// enter counts one hold-path request of key; it returns false (and counts
// nothing) when maxHoldPathRevisions revisions are counted already.
func (h *holdPath) enter(key revision.Key) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	c := h.m[key]
	if c == nil {
		if len(h.m) >= maxHoldPathRevisions {
			return false
		}
		if h.m == nil {
			h.m = map[revision.Key]*holdCount{}
		}
		c = &holdCount{}
		h.m[key] = c
	}
	c.active++
	c.arrived++
	c.zeroSent = false
	return true
}

// leave ends one hold-path request of key counted by enter.
func (h *holdPath) leave(key revision.Key) {
	h.mu.Lock()
	if c := h.m[key]; c != nil && c.active > 0 {
		c.active--
	}
	h.mu.Unlock()
}

// report records one sample per counted revision: its hold-path requests
// in flight and those arrived since the last report. After its last
// request ended a revision is reported at zero while keep says so (nil:
// once), then forgotten.
func (h *holdPath) report(rec autoscaler.Recorder, source string, now time.Time, keep func(revision.Key) bool) {
	h.mu.Lock()
	samples := make([]autoscaler.Sample, 0, len(h.m))
	for k, c := range h.m {
		if c.active == 0 && c.arrived == 0 {
			if c.zeroSent && (keep == nil || !keep(k)) {
				delete(h.m, k)
				continue
			}
			c.zeroSent = true
		}
		samples = append(samples, autoscaler.Sample{Revision: k, Source: source, Time: now,
			Concurrency: float64(c.active), Requests: float64(c.arrived)})
		c.arrived = 0
	}
	h.mu.Unlock()
	for _, s := range samples { // outside the lock: Record may poke
		rec.Record(s)
	}
}

// HoldPathSource is the Sample.Source of ReportHoldPath's samples.
const HoldPathSource = "activator-hold-path"

// ReportHoldPath records, for every revision with requests that came
// through the hold listener (HoldPathMetadata), one sample into rec:
// Concurrency is those requests in flight now (held, or routed and still
// open: with container concurrency 0 the stream ends when the request is
// routed), Requests those that arrived since the last call. Call it once
// per second, as Envoy flushes its stats; source names this replica
// (HoldPathSource, plus a replica suffix with several).
//
// Once a revision's hold-path requests have ended it is reported at zero
// while keep(revision) is true, then forgotten (keep nil: one zero
// report). Pass "the revision has backends": a revision woken by
// hold-path requests alone has a cluster whose stats Envoy creates only
// at its first request, so without these zeros the autoscaler would have
// no data for it and, never scaling to zero on missing data, would keep
// it awake.
func (s *Server) ReportHoldPath(rec autoscaler.Recorder, source string, now time.Time, keep func(revision.Key) bool) {
	s.hold.report(rec, source, now, keep)
}
