package results

import (
	"encoding/json"
	"fmt"
	"os"
	"time"
)

// Peers is one run of the peers scenario (bench/scenarios -only peers):
// thaw beside the KEDA HTTP add-on interceptor and Knative's queue-proxy,
// the same backend binary, one load generator. Latency: one constant-rate
// attack per round cycles through every side request by request, RateRPS
// in total (RateRPS / len(Sides) per side). Throughput and CPU: each side
// alone with Concurrency requests in flight, the sides back to back, order
// rotating by round.
type Peers struct {
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished"`
	// Quick is true for a shortened development run; Smoke for the CI
	// check (one request through each side, no figures).
	Quick bool `json:"quick"`
	Smoke bool `json:"smoke,omitempty"`
	// Load1Start and Load1End are the 1-minute load averages around the
	// run; RoundLoad1 the one at the start of each latency round.
	Load1Start float64   `json:"load1Start"`
	Load1End   float64   `json:"load1End"`
	RoundLoad1 []float64 `json:"roundLoad1,omitempty"`
	// RateRPS is the total constant rate over all sides (requests/s).
	RateRPS      int     `json:"rateRPS"`
	Rounds       int     `json:"rounds"`
	RoundSeconds float64 `json:"roundSeconds"`
	// Concurrency is the requests in flight of the throughput rounds.
	Concurrency       int     `json:"concurrency"`
	ThroughputRounds  int     `json:"throughputRounds"`
	ThroughputSeconds float64 `json:"throughputSeconds"`
	// Peers are the programs compared, with how each was run.
	Peers []Peer `json:"peers"`
	// Sides are the ways of reaching the backend, the static Envoy first.
	Sides []PeerSide `json:"sides"`
	// Cold is the cold-start overhead of thaw and of the KEDA interceptor.
	Cold []PeerCold `json:"cold,omitempty"`
	// Errors lists what failed (a peer that did not build or start, a side
	// that answered errors), one line each.
	Errors []string `json:"errors,omitempty"`
}

// Peer is one program of the comparison and how it was run.
type Peer struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	// Command is the command line as typed; Config the environment or
	// configuration it was given (one KEY=value or YAML document).
	Command string `json:"command"`
	Config  string `json:"config,omitempty"`
	// Error is why the peer could not be built or started (empty: ran).
	Error string `json:"error,omitempty"`
}

// PeerSide is one way of reaching the backend in the peers scenario.
type PeerSide struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	// Failed is why the side was not measured (empty: measured).
	Failed  string  `json:"failed,omitempty"`
	Latency Latency `json:"latency"`
	// Per latency round, in round order: p50, p90 and p99 (ms).
	RoundP50Ms []float64 `json:"roundP50Ms,omitempty"`
	RoundP90Ms []float64 `json:"roundP90Ms,omitempty"`
	RoundP99Ms []float64 `json:"roundP99Ms,omitempty"`
	// RoundThroughput is successful requests/s per throughput round.
	RoundThroughput  []float64 `json:"roundThroughput,omitempty"`
	ThroughputErrors int       `json:"throughputErrors"`
	// CPU is the CPU time (user + system, /proc) each proxy process of the
	// side used during the throughput rounds, in seconds per 10,000
	// successful requests; CPURequests is that request count.
	CPU         []ProcessCPU `json:"cpu,omitempty"`
	CPURequests int64        `json:"cpuRequests,omitempty"`
}

// ProcessCPU is one process's CPU cost: seconds per 10,000 requests.
type ProcessCPU struct {
	Process       string  `json:"process"`
	SecondsPer10k float64 `json:"secondsPer10k"`
}

// TotalCPU returns the side's CPU seconds per 10,000 requests summed over
// its processes.
func (s *PeerSide) TotalCPU() float64 {
	var t float64
	for _, c := range s.CPU {
		t += c.SecondsPer10k
	}
	return t
}

// Write stores p as indented JSON at path.
func (p *Peers) Write(path string) error {
	b, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return fmt.Errorf("encode peers: %w", err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write peers: %w", err)
	}
	return nil
}

// ReadPeers loads what Write stored.
func ReadPeers(path string) (*Peers, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read peers: %w", err)
	}
	var p Peers
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, fmt.Errorf("decode peers %s: %w", path, err)
	}
	return &p, nil
}

// PeerCold is the cold-start overhead of one side of the peers scenario:
// the time from the backend being ready to the response, so the backend's
// own start is left out. Includes says what the figure covers on that side.
type PeerCold struct {
	Name     string `json:"name"`
	Includes string `json:"includes"`
	N        int    `json:"n"`
	Errors   int    `json:"errors"`
	// Overhead quantiles over the successful samples, in ms.
	P50Ms float64 `json:"p50Ms"`
	P90Ms float64 `json:"p90Ms"`
	MaxMs float64 `json:"maxMs"`
	// Fails holds up to 5 error messages.
	Fails []string `json:"fails,omitempty"`
}
