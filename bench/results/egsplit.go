package results

// EGSplit is bench scenario egsplit: EG's Envoy's CPU per request through
// a 90/10 RevisionSplit route, against a single Revision and a plain EG
// Backend, closed loop, the three sides back to back in each round
// (Concurrency in flight, ThroughputRounds rounds of ThroughputSeconds).
type EGSplit struct {
	Concurrency       int     `json:"concurrency"`
	ThroughputSeconds float64 `json:"throughputSeconds"`
	ThroughputRounds  int     `json:"throughputRounds"`
	// Plain: an EG Backend with the main Revision's backend address;
	// Revision: the main Revision; Split: the RevisionSplit (main 90%,
	// canary 10%, each Revision with one warm backend process).
	Plain    Side `json:"plain"`
	Revision Side `json:"revision"`
	Split    Side `json:"split"`
	// CanaryShare is the canary's share (percent) of SplitChecked
	// sequential requests through the split before the measurement.
	CanaryShare  float64 `json:"canaryShare"`
	SplitChecked int     `json:"splitChecked"`
}
