package app

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"text/tabwriter"
	"time"

	"github.com/thaw-dev/thaw/xds"
)

// ExcludedPath is the admin endpoint listing the xDS streams thaw closed as
// stalled (JSON list of xds.ExcludedNode, oldest first, at most 32).
const ExcludedPath = "/status/xds-excluded"

func excludedHandler(x *xds.Server) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(x.Excluded())
	})
}

// DecodeExcluded reads the ExcludedPath response.
func DecodeExcluded(r io.Reader) ([]xds.ExcludedNode, error) {
	var out []xds.ExcludedNode
	if err := json.NewDecoder(r).Decode(&out); err != nil {
		return nil, fmt.Errorf("decode excluded nodes: %w", err)
	}
	return out, nil
}

// WriteExcludedTable prints the excluded streams after the status table;
// nothing when there are none.
func WriteExcludedTable(w io.Writer, nodes []xds.ExcludedNode, now time.Time) error {
	if len(nodes) == 0 {
		return nil
	}
	fmt.Fprintln(w, "\nxDS streams closed as stalled (not counted for scale-to-zero confirmation until they reconnect and ACK):")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tREASON\tPENDING\tAGO")
	for _, n := range nodes {
		id := n.ID
		if id == "" {
			id = "(none sent)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\n", id, n.Reason, n.Pending, now.Sub(n.At).Truncate(time.Second))
	}
	return tw.Flush()
}
