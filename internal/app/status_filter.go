package app

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"
	"unicode"

	"github.com/thaw-dev/thaw/revision"
)

// StatusRevisionParam is the /status query parameter that asks for one
// revision's row: /status?revision=namespace/name.
const StatusRevisionParam = "revision"

// MaxStatusRevisionLen bounds the revision parameter of /status, in bytes:
// a DNS-label namespace (63), '/', and a DNS-subdomain name (253).
const MaxStatusRevisionLen = 63 + 1 + 253

// maxStatusQueryLen bounds the whole /status query string, in bytes, so
// that a request's parsing stays small whatever a client sends.
const maxStatusQueryLen = 1024

// StatusSource answers /status: every revision's row, or one revision's.
type StatusSource interface {
	// Status returns one row per revision, valid and invalid.
	Status() []RevisionStatus
	// StatusOf returns the row of revision key, valid or invalid; false
	// when thaw knows no revision by that key. Its cost does not grow with
	// the number of revisions.
	StatusOf(key revision.Key) (RevisionStatus, bool)
}

var _ StatusSource = (*App)(nil)

// ParseStatusRevision checks a /status revision parameter and returns its
// key. Errors: longer than MaxStatusRevisionLen, a space or control
// character, or not "namespace/name" (revision.ParseKey).
func ParseStatusRevision(s string) (revision.Key, error) {
	if len(s) > MaxStatusRevisionLen {
		return revision.Key{}, fmt.Errorf("revision: %d bytes, at most %d (namespace/name)", len(s), MaxStatusRevisionLen)
	}
	for _, r := range s {
		if unicode.IsSpace(r) || unicode.IsControl(r) || r == unicode.ReplacementChar {
			return revision.Key{}, fmt.Errorf("revision %q: a space, control character or invalid UTF-8", s)
		}
	}
	return revision.ParseKey(s)
}

// statusHandler serves /status: without a query every revision's row as a
// JSON list; with ?revision=namespace/name a list of that one row, 404 when
// thaw knows no such revision, 400 when the parameter is malformed, given
// twice, or the query is longer than maxStatusQueryLen.
func statusHandler(src StatusSource) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if len(r.URL.RawQuery) > maxStatusQueryLen {
			http.Error(w, fmt.Sprintf("query: %d bytes, at most %d", len(r.URL.RawQuery), maxStatusQueryLen), http.StatusBadRequest)
			return
		}
		vals, one := r.URL.Query()[StatusRevisionParam]
		if !one {
			writeStatusJSON(w, src.Status())
			return
		}
		if len(vals) != 1 {
			http.Error(w, fmt.Sprintf("revision: given %d times, want once", len(vals)), http.StatusBadRequest)
			return
		}
		key, err := ParseStatusRevision(vals[0])
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		row, ok := src.StatusOf(key)
		if !ok {
			http.Error(w, fmt.Sprintf("revision %s not found", key), http.StatusNotFound)
			return
		}
		writeStatusJSON(w, []RevisionStatus{row})
	}
}

func writeStatusJSON(w http.ResponseWriter, rows []RevisionStatus) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(rows)
}

// StatusOf returns revision key's /status row (see StatusSource): a map
// lookup in the registry's snapshot, then the per-revision reads of
// Status.
func (a *App) StatusOf(key revision.Key) (RevisionStatus, bool) {
	snap := a.opts.Registry.Snapshot()
	if rev := snap.Get(key); rev != nil {
		return a.statusRow(rev, time.Now()), true
	}
	if err, ok := snap.Invalid[key]; ok {
		return invalidStatusRow(key, err), true
	}
	return RevisionStatus{}, false
}

// statusRow is a valid revision's /status row at now.
func (a *App) statusRow(rev *revision.Revision, now time.Time) RevisionStatus {
	row := RevisionStatus{Revision: rev.Key.String(), Mode: rev.Mode.String(), Desired: rev.DesiredScale,
		Ready: len(rev.ReadyBackends())}
	if d, ok := a.scaler.Status(rev.Key); ok {
		row.StableConcurrency, row.RPS, row.InPanic = d.StableConcurrency, d.StableRPS, d.InPanic
		row.ExcessBurstCapacity = d.ExcessBurstCapacity
	}
	row.Held, row.InFlight = a.activatorCounts(rev.Key)
	row.Window = windowStatus(rev.Spec.Wake, now)
	if re, ok := a.platform.(revisionErrorer); ok {
		row.Error = re.RevisionError(rev.Key)
	}
	if err := a.xds.SkipReason(rev.Key); err != nil && row.Error == "" {
		row.Error = "not routed: " + err.Error()
	}
	if rev.WakeFailure != nil && row.Error == "" {
		row.Error = "wake-up failed: " + rev.WakeFailure.String()
	}
	return row
}

// invalidStatusRow is the /status row of a revision whose configuration
// was rejected.
func invalidStatusRow(key revision.Key, err error) RevisionStatus {
	return RevisionStatus{Revision: key.String(), Mode: "invalid", Desired: -1, Error: err.Error()}
}
