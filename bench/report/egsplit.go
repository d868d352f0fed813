package main

import (
	"fmt"

	"github.com/thaw-dev/thaw/bench/results"
)

// egSplitRows judges a RevisionSplit route inside Envoy Gateway: EG's
// Envoy's CPU per request through a 90/10 split against a plain EG
// Backend (the target a single Revision has, ≤ 1.05) and against a single
// Revision (reported: what the weighted clusters add), and the canary's
// measured share (90/10 within ±3 points).
func egSplitRows(s *results.EGSplit) []row {
	if s == nil {
		return []row{{What: "Envoy Gateway: a 90/10 RevisionSplit route through EG's Envoy", Measured: "not run", Result: missing}}
	}
	what := fmt.Sprintf("Envoy Gateway: warm path Envoy CPU per request, 90/10 RevisionSplit / plain Backend (%d in flight)", s.Concurrency)
	rows := []row{warmCPURow(what, s.Split, s.Plain,
		"what a warm request through a split (weighted clusters, one thaw cluster per Revision) costs EG's Envoy against EG's own routing")}
	r, ok := results.EnvoyCPURatio(s.Split, s.Revision)
	measured := "not measured"
	if ok && s.Split.CPURequests > 0 {
		measured = fmt.Sprintf("%.3f (median of %d rounds; pooled %.1f vs %.1f µs per request)", r, len(s.Split.RoundEnvoyCPUUs),
			s.Split.EnvoyCPUUsPerRequest, s.Revision.EnvoyCPUUsPerRequest)
	}
	rows = append(rows, row{
		What:     fmt.Sprintf("Envoy Gateway: warm path Envoy CPU per request, 90/10 RevisionSplit / single Revision (%d in flight)", s.Concurrency),
		Measured: measured, Target: "reported", Result: info,
		Means: "what choosing a weighted cluster per request adds to a single Revision's route"})
	share := s.CanaryShare
	rows = append(rows, row{
		What:     "Envoy Gateway: the 10% Revision's share of a 90/10 RevisionSplit",
		Measured: fmt.Sprintf("%.1f%% of %d sequential requests", share, s.SplitChecked),
		Target:   "10 ± 3", Result: atMost(s.SplitChecked > 0, abs(share-10), 3),
		Means: "Envoy's weighted clusters carry the split's percents"})
	return rows
}

func abs(f float64) float64 {
	if f < 0 {
		return -f
	}
	return f
}
