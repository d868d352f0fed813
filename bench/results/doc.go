// Package results holds the figures thaw's benchmarks produce: the scenario
// results bench/scenarios writes as JSON, and a parser for the text output
// of `go test -bench`. bench/report reads both and renders
// docs/BENCHMARKS.md.
//
// Input: the scenarios' measurements (filled in by bench/scenarios) and
// `go test -bench` output (ParseGoBench); output: JSON documents (one
// struct per scenario, with units in field names and comments) and the
// helpers both sides share (Quantile, Millis, MedianRatio). ReadScenarios
// and ReadPeers read the JSON files back for bench/report.
package results
