package state

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/thaw-dev/thaw/wake"
)

// wakeState is a revision's compiled wake policy and the bytes it was
// compiled from (RevisionUpdate.Wake), immutable once stored.
type wakeState struct {
	raw []byte
	pol *wake.Policy
	// answered counts requests answered by the policy without holding
	// them: index i < len(pol.Rules) is rule i, the last is the waiting
	// page. Reported to thaw as deltas (Table.WakeCounts).
	answered []atomic.Int64
	reported []int64 // guarded by the reporter (one goroutine)
}

// setWake compiles raw when it differs from the revision's current
// policy; an empty raw removes the policy. A policy that does not compile
// leaves the revision without one (thaw validated it; the module does not
// trust the stream more than that) and is reported in the error.
func (r *Revision) setWake(raw json.RawMessage) error {
	cur := r.wake.Load()
	if cur != nil && bytes.Equal(cur.raw, raw) {
		return nil
	}
	if len(raw) == 0 {
		if cur != nil {
			r.wake.Store(nil)
		}
		return nil
	}
	ws := &wakeState{raw: bytes.Clone(raw)}
	var c wake.Config
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	err := dec.Decode(&c)
	if err == nil {
		var errs []error
		ws.pol, errs = wake.Compile(&c)
		err = errors.Join(errs...)
	}
	if err != nil {
		ws.pol = nil
		r.wake.Store(ws) // remembered, so the same bytes are not compiled again
		return fmt.Errorf("%w: revision %q: wake policy ignored: %w", ErrInvalid, r.Key, err)
	}
	if ws.pol == nil { // an empty policy
		r.wake.Store(ws)
		return nil
	}
	ws.answered = make([]atomic.Int64, len(ws.pol.Rules)+1)
	ws.reported = make([]int64, len(ws.answered))
	r.wake.Store(ws)
	return nil
}

// WakePolicy returns the revision's wake policy (nil: none) and whether
// the revision is at zero (no backend this Envoy may send requests to).
// Two atomic loads: holders call it only for a request Acquire could not
// place.
func (r *Revision) WakePolicy() (*wake.Policy, bool) {
	var pol *wake.Policy
	if ws := r.wake.Load(); ws != nil {
		pol = ws.pol
	}
	return pol, len(*r.backends.Load()) == 0
}

// WakeAnswer decides for a request req that Acquire could not place: Hold
// (hold it as usual) unless the revision is at zero and its policy answers
// req (wake.Policy.Evaluate). A Static or WaitingPage answer is counted
// for the report; a WaitingPage also pokes thaw so the revision wakes.
// req is built only when the policy may answer (answers reports that).
func (r *Revision) WakeAnswer(req func() wake.Request) (wake.Action, *wake.Rule) {
	ws := r.wake.Load()
	if ws == nil || !ws.pol.AnswersAtZero() || len(*r.backends.Load()) > 0 {
		return wake.Hold, nil
	}
	action, rule := ws.pol.Evaluate(req())
	switch action {
	case wake.Static:
		for i := range ws.pol.Rules {
			if &ws.pol.Rules[i] == rule {
				ws.answered[i].Add(1)
				r.markActive()
			}
		}
	case wake.WaitingPage:
		ws.answered[len(ws.pol.Rules)].Add(1)
		r.markActive()
		r.t.poke(r.Key)
	}
	return action, rule
}

// ColdStartHeader reports whether the revision's policy asks for the
// cold-start header (wake.HeaderColdStart) on held requests.
func (r *Revision) ColdStartHeader() bool {
	ws := r.wake.Load()
	return ws != nil && ws.pol != nil && ws.pol.ColdStartHeader
}

// WakeCount is how many requests one rule (or the waiting page, Rule "")
// of a revision's wake policy answered since the last report.
type WakeCount struct {
	Key  string `json:"key"`
	Rule string `json:"rule,omitempty"`
	// Page: the waiting page (Rule is then empty).
	Page  bool  `json:"page,omitempty"`
	Count int64 `json:"count"`
}

// WakeCounts returns the wake answers of every revision since the last
// call (non-zero deltas only). It visits only the revisions listed for
// the reporter (a wake answer lists its revision, reportlist.go), and is
// called after ReportCounts, which keeps a revision listed while it has
// answers to report.
func (t *Table) WakeCounts() []WakeCount {
	var out []WakeCount
	t.walkListed(false, func(r *Revision) { out = r.appendWakeCounts(out) })
	return out
}
