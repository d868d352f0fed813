package app

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"text/tabwriter"
	"time"

	"github.com/thaw-dev/thaw/wake"
)

// RevisionStatus is one row of `thaw status`: the admin endpoint /status
// returns a JSON list of them.
type RevisionStatus struct {
	Revision string `json:"revision"`
	// Mode is "serve" or "proxy"; "invalid" for a rejected configuration.
	Mode string `json:"mode"`
	// Desired is the autoscaler's desired scale (pods), -1 before the first
	// decision.
	Desired int32 `json:"desired"`
	// Ready is the number of ready backends.
	Ready int `json:"ready"`
	// StableConcurrency is the stable-window average of requests in flight.
	StableConcurrency float64 `json:"stableConcurrency"`
	// RPS is the stable-window average of requests per second.
	RPS float64 `json:"rps"`
	// InPanic is true while the decider is in panic mode.
	InPanic bool `json:"inPanic"`
	// ExcessBurstCapacity is the decider's latest excess burst capacity in
	// the revision's metric unit (negative keeps the activator in the path
	// when container concurrency is above 0); 0 before the first decision.
	ExcessBurstCapacity int32 `json:"excessBurstCapacity"`
	// Held is the number of requests the activator holds now.
	Held int `json:"held"`
	// InFlight is the number of requests the activator routed that have not
	// finished.
	InFlight int `json:"inFlight"`
	// Window is the open warm window of the revision's wake policy:
	// "name: min-scale N until RFC 3339 time" ("" when none is open).
	Window string `json:"window,omitempty"`
	// Error explains why a revision is invalid or its last scale failed.
	Error string `json:"error,omitempty"`
}

// WriteStatusTable prints statuses as an aligned table, sorted by revision.
func WriteStatusTable(w io.Writer, rows []RevisionStatus) error {
	sort.Slice(rows, func(i, j int) bool { return rows[i].Revision < rows[j].Revision })
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "REVISION\tMODE\tDESIRED/READY\tCONCURRENCY\tRPS\tPANIC\tHELD\tIN-FLIGHT\tWINDOW\tERROR")
	for _, r := range rows {
		desired := fmt.Sprint(r.Desired)
		if r.Desired < 0 {
			desired = "-"
		}
		window := r.Window
		if window == "" {
			window = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s/%d\t%.1f\t%.1f\t%v\t%d\t%d\t%s\t%s\n", r.Revision, r.Mode, desired, r.Ready,
			r.StableConcurrency, r.RPS, r.InPanic, r.Held, r.InFlight, window, r.Error)
	}
	return tw.Flush()
}

// DecodeStatus reads the admin /status JSON.
func DecodeStatus(r io.Reader) ([]RevisionStatus, error) {
	var rows []RevisionStatus
	if err := json.NewDecoder(r).Decode(&rows); err != nil {
		return nil, fmt.Errorf("decode status: %w", err)
	}
	return rows, nil
}

// windowStatus describes the open warm window of a wake policy at now
// ("" when none is open).
func windowStatus(p *wake.Policy, now time.Time) string {
	w, ok := p.Active(now)
	if !ok {
		return ""
	}
	return fmt.Sprintf("%s: min-scale %d until %s", w.Name, w.MinScale, w.Until.Format(time.RFC3339))
}
