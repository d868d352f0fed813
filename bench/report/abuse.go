package main

import (
	"fmt"

	"github.com/thaw-dev/thaw/bench/results"
)

// abuseStatsRSSLimitMiB is the documented bound (docs/security.md, "Bounds") on thaw's
// RSS after the invented-cluster-names abuse.
const abuseStatsRSSLimitMiB = 256

// abuseRows judges thaw under hostile gRPC clients (issue 13).
func abuseRows(ab *results.Abuse) []row {
	if ab == nil {
		return []row{{What: "thaw under hostile gRPC clients", Measured: "not run", Result: missing}}
	}
	var rows []row
	for _, st := range ab.Steps {
		measured := fmt.Sprintf("RSS %.0f MiB (heap %.0f) right after, %.0f MiB (heap %.0f) %.0f s later, from %.0f MiB at start; %d of %d refused or closed; real request %s",
			st.RSSMiB, st.HeapInuseMiB, st.AfterRSSMiB, st.AfterHeapInuseMiB, st.AfterSeconds, ab.BaselineRSSMiB,
			st.Refused, st.Sent, map[bool]string{true: "200", false: "FAILED"}[st.RealRequestOK])
		r := row{What: "abuse: " + st.Description, Measured: measured}
		switch st.Name {
		case "stats-fake-clusters":
			r.Target = fmt.Sprintf("RSS ≤ %d MiB; real request 200", abuseStatsRSSLimitMiB)
			r.Result = atMost(true, st.AfterRSSMiB, abuseStatsRSSLimitMiB)
			r.Means = "names of revisions the registry does not know keep no state in the stats sink or the collector"
		default:
			r.Target = "every abusive stream refused or closed; real request 200"
			r.Result = atLeast(true, float64(st.Refused), float64(st.Sent))
			r.Means = "idle streams live at most --extproc-header-timeout / --xds-ack-timeout; their memory while open is gRPC's per-stream cost"
		}
		if !st.RealRequestOK {
			r.Result = fail
		}
		rows = append(rows, r)
	}
	return rows
}
