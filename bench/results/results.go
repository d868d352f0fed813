package results

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"slices"
	"time"
)

// Scenarios is everything one run of bench/scenarios measured. A scenario
// that could not run leaves its field nil and adds a line to Errors.
type Scenarios struct {
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished"`
	// Quick is true for a shortened development run (-quick).
	Quick bool `json:"quick"`
	// Load1Start and Load1End are the 1-minute load averages around the run.
	Load1Start float64 `json:"load1Start"`
	Load1End   float64 `json:"load1End"`
	Paths      *Paths  `json:"paths,omitempty"`
	Cold       []Cold  `json:"cold,omitempty"`
	// ColdModule is Cold through the activator module (thaw local
	// --activator=module), measured right after Cold in the same run
	// (-cold-activators extproc,module).
	ColdModule []Cold `json:"coldModule,omitempty"`
	Burst      *Burst `json:"burst,omitempty"`
	// Failover is thaw killed under proxy-mode load and restarted.
	Failover *Failover `json:"failover,omitempty"`
	// BurstLarge are the repeated 10,000-request bursts at zero.
	BurstLarge []Burst `json:"burstLarge,omitempty"`
	Scale      *Scale  `json:"scale,omitempty"`
	// Scale100k is scenario scale100k (not in the default set).
	Scale100k *ScaleLarge `json:"scale100k,omitempty"`
	// Protocols is the gRPC and WebSocket scenario (protocols.go).
	Protocols *Protocols `json:"protocols,omitempty"`
	Abuse     *Abuse     `json:"abuse,omitempty"`
	// EnvoyGateway is thaw as Envoy Gateway's extension (eg).
	EnvoyGateway *EnvoyGateway `json:"envoyGateway,omitempty"`
	// EGSplit is a RevisionSplit route through EG's Envoy (egsplit).
	EGSplit *EGSplit `json:"egSplit,omitempty"`
	// Errors lists scenarios that failed, one line each.
	Errors []string `json:"errors,omitempty"`
}

// Latency summarises one side of a constant-rate load run. Durations are in
// milliseconds.
type Latency struct {
	Requests int `json:"requests"`
	Errors   int `json:"errors"`
	// RateRPS is the rate the load generator actually sent at (requests/s).
	RateRPS float64 `json:"rateRPS"`
	P50Ms   float64 `json:"p50Ms"`
	P90Ms   float64 `json:"p90Ms"`
	P99Ms   float64 `json:"p99Ms"`
	MaxMs   float64 `json:"maxMs"`
}

// Side is one way of reaching the same backend in the request-path
// scenarios: a plain Envoy, thaw's serve mode or thaw's proxy mode.
type Side struct {
	Name        string  `json:"name"`
	Description string  `json:"description"`
	Latency     Latency `json:"latency"`
	// ThroughputRPS is successful requests per second with Concurrency
	// requests always in flight (closed loop).
	ThroughputRPS    float64 `json:"throughputRPS"`
	ThroughputErrors int     `json:"throughputErrors"`
	// Per round, in round order (the sides of one round ran back to back):
	// latency p50 and p99 (ms) and closed-loop throughput (requests/s).
	RoundP50Ms      []float64 `json:"roundP50Ms"`
	RoundP99Ms      []float64 `json:"roundP99Ms"`
	RoundThroughput []float64 `json:"roundThroughput"`
	// CPU per successful request during the closed-loop rounds, in µs of
	// user + system time (/proc): thaw's process and the Envoy that served
	// the side (0 when not measured).
	ThawCPUUsPerRequest  float64 `json:"thawCPUUsPerRequest,omitempty"`
	EnvoyCPUUsPerRequest float64 `json:"envoyCPUUsPerRequest,omitempty"`
	// Requests is the number of successful closed-loop requests the CPU
	// figures divide by.
	CPURequests int64 `json:"cpuRequests,omitempty"`
	// RoundEnvoyCPUUs is EnvoyCPUUsPerRequest per closed-loop round, in
	// round order (the sides of one round ran back to back).
	RoundEnvoyCPUUs []float64 `json:"roundEnvoyCPUUs,omitempty"`
}

// EnvoyCPURatio returns a's Envoy CPU per request over b's: the median
// over closed-loop rounds of the per-round ratio, or (for figures without
// rounds) the ratio of the pooled figures; false when either is missing.
func EnvoyCPURatio(a, b Side) (float64, bool) {
	if r, ok := MedianRatio(a.RoundEnvoyCPUUs, b.RoundEnvoyCPUUs); ok {
		return r, true
	}
	if a.EnvoyCPUUsPerRequest > 0 && b.EnvoyCPUUsPerRequest > 0 {
		return a.EnvoyCPUUsPerRequest / b.EnvoyCPUUsPerRequest, true
	}
	return 0, false
}

// Paths is the warm-path and activator-path comparison, in Rounds rounds.
// Warm path: one constant-rate attack alternates request by request between
// the static Envoy and serve mode, each at RateRPS. Activator path: serve
// mode and proxy mode each alone at RateRPS, back to back. Throughput is
// measured per side, closed loop, the sides back to back in each round.
type Paths struct {
	RateRPS           int     `json:"rateRPS"`
	Rounds            int     `json:"rounds"`
	RoundSeconds      float64 `json:"roundSeconds"`
	Concurrency       int     `json:"concurrency"`
	ThroughputSeconds float64 `json:"throughputSeconds"`
	ThroughputRounds  int     `json:"throughputRounds"`
	// Static and Serve are the warm-path pair.
	Static Side `json:"static"`
	Serve  Side `json:"serve"`
	// ServeWithProxy and Proxy are the activator-path pair (the same
	// serve-mode revision as Serve, measured back to back with Proxy).
	ServeWithProxy Side `json:"serveWithProxy"`
	Proxy          Side `json:"proxy"`
	// Module and ModuleCC4 are the activator module's sides (a second
	// `thaw local` with --activator=module, warm backend,
	// target-burst-capacity -1; container concurrency 0 and 4), and
	// ServeWithModule the serve-mode side measured back to back with
	// Module; nil when not run. ModuleCC4 runs in the closed-loop rounds
	// only (at Concurrency in flight, most of its requests are held).
	ServeWithModule *Side `json:"serveWithModule,omitempty"`
	Module          *Side `json:"module,omitempty"`
	ModuleCC4       *Side `json:"moduleCC4,omitempty"`
	// StaticLimit4 is the like-for-like baseline of ModuleCC4: the static
	// Envoy's route to the same backend with Envoy's own limit of 4
	// (circuit breakers: 4 upstream connections, the other requests
	// queued in its connection pool; no module), in the closed-loop
	// rounds only; nil when not run.
	StaticLimit4 *Side `json:"staticLimit4,omitempty"`
}

// Cold is the cold-start overhead for one backend startup delay.
type Cold struct {
	StartupDelayMs float64 `json:"startupDelayMs"`
	// N is the number of cold starts measured; Errors those that failed.
	N      int      `json:"n"`
	Errors int      `json:"errors"`
	Fails  []string `json:"fails,omitempty"`
	// Overhead: response end minus the moment the backend began listening.
	OverheadP50Ms float64 `json:"overheadP50Ms"`
	OverheadP99Ms float64 `json:"overheadP99Ms"`
	OverheadMaxMs float64 `json:"overheadMaxMs"`
	// Total: request sent to response end, as the client sees it.
	TotalP50Ms float64 `json:"totalP50Ms"`
	TotalP99Ms float64 `json:"totalP99Ms"`
	// Spawn: request sent to the backend process's main running.
	SpawnP50Ms float64      `json:"spawnP50Ms"`
	Samples    []ColdSample `json:"samples"`
}

// ColdSample is one cold start, in milliseconds.
type ColdSample struct {
	TotalMs    float64 `json:"totalMs"`
	SpawnMs    float64 `json:"spawnMs"`
	StartupMs  float64 `json:"startupMs"`
	OverheadMs float64 `json:"overheadMs"`
}

// Burst is the burst-from-zero run.
type Burst struct {
	Requests int `json:"requests"`
	Errors   int `json:"errors"`
	// ErrorSamples are up to 10 distinct error descriptions.
	ErrorSamples []string `json:"errorSamples,omitempty"`
	// Settings describes the revision (autoscaling settings, workload);
	// Short in a few words for the picture.
	Settings string `json:"settings"`
	Short    string `json:"short"`
	// AllServedMs is burst start to the last response's end.
	AllServedMs float64 `json:"allServedMs"`
	// FirstServedMs is burst start to the first response's end.
	FirstServedMs float64 `json:"firstServedMs"`
	LatencyP50Ms  float64 `json:"latencyP50Ms"`
	LatencyP99Ms  float64 `json:"latencyP99Ms"`
	// DesiredMax is the highest desired scale seen; TimeToDesiredMs the
	// first status sample showing it, TimeToReadyMs the first showing that
	// many ready backends (-1: never). Resolution: SampleEveryMs.
	DesiredMax      int     `json:"desiredMax"`
	TimeToDesiredMs float64 `json:"timeToDesiredMs"`
	TimeToReadyMs   float64 `json:"timeToReadyMs"`
	MaxHeld         int     `json:"maxHeld"`
	SampleEveryMs   float64 `json:"sampleEveryMs"`
	// Samples is the /status timeline of the revision.
	Samples []BurstSample `json:"samples"`
	// BackendMaxInFlight is the most requests one backend had at once
	// (the workload's own count), over the backends /stats reached.
	BackendMaxInFlight int `json:"backendMaxInFlight"`
	// ContainerConcurrency is the revision's limit (0: none).
	ContainerConcurrency int `json:"containerConcurrency"`
	// EnvoyStats are the non-zero counters of thaw's Envoy about the
	// activator path (ext_proc, the activator clusters) after the burst.
	EnvoyStats map[string]int64 `json:"envoyStats,omitempty"`
	// Picture is the path of the timeline picture, relative to the repo.
	Picture string `json:"picture,omitempty"`
	// Memory is the resident memory of thaw and Envoy before the burst and
	// at its peak.
	Memory BurstMemory `json:"memory"`
}

// Failover is the thaw-crash scenario: a constant load on a proxy-mode
// revision with ready backends, thaw killed (SIGKILL) and restarted.
// Times are milliseconds; -1 means never seen.
type Failover struct {
	Settings     string   `json:"settings"`
	RateRPS      int      `json:"rateRPS"`
	Requests     int      `json:"requests"`
	Errors       int      `json:"errors"`
	ErrorSamples []string `json:"errorSamples,omitempty"`
	// KillAtMs and RestartAtMs are from the start of the load.
	KillAtMs    float64 `json:"killAtMs"`
	RestartAtMs float64 `json:"restartAtMs"`
	// DirectAfterMs is from the kill until the revision's backends
	// answered a request retried on them by the route's failover retry
	// (priority 1 of its ClusterLoadAssignment); BackAfterMs from the
	// restart until the new thaw's activator routed a request again.
	DirectAfterMs float64 `json:"directAfterMs"`
	BackAfterMs   float64 `json:"backAfterMs"`
	// Before, Down and After are the requests sent before the kill, while
	// thaw was down, and after the restart.
	Before Latency `json:"before"`
	Down   Latency `json:"down"`
	After  Latency `json:"after"`
}

// BurstMemory is resident memory (VmRSS, MiB) of thaw and its Envoy just
// before a burst and the highest sampled while it was served.
type BurstMemory struct {
	ThawBeforeMiB  float64 `json:"thawBeforeMiB"`
	ThawPeakMiB    float64 `json:"thawPeakMiB"`
	EnvoyBeforeMiB float64 `json:"envoyBeforeMiB"`
	EnvoyPeakMiB   float64 `json:"envoyPeakMiB"`
}

// PerHeldKiB returns the memory growth of thaw and Envoy during the burst
// per request held at the busiest moment (KiB; 0 when nothing was held).
func (b *Burst) PerHeldKiB() (thaw, envoy float64) {
	if b.MaxHeld <= 0 {
		return 0, 0
	}
	per := func(before, peak float64) float64 { return max(0, peak-before) * 1024 / float64(b.MaxHeld) }
	return per(b.Memory.ThawBeforeMiB, b.Memory.ThawPeakMiB), per(b.Memory.EnvoyBeforeMiB, b.Memory.EnvoyPeakMiB)
}

// BurstSample is one /status poll during the burst; TMs is milliseconds
// since the burst started (negative before).
type BurstSample struct {
	TMs      float64 `json:"tMs"`
	Held     int     `json:"held"`
	InFlight int     `json:"inFlight"`
	Desired  int     `json:"desired"`
	Ready    int     `json:"ready"`
	Served   int     `json:"served"`
}

// Write stores s as indented JSON at path.
func (s *Scenarios) Write(path string) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("encode scenarios: %w", err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write scenarios: %w", err)
	}
	return nil
}

// ReadScenarios loads what Write stored.
func ReadScenarios(path string) (*Scenarios, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read scenarios: %w", err)
	}
	var s Scenarios
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("decode scenarios %s: %w", path, err)
	}
	return &s, nil
}

// Quantile returns the q-quantile (0 <= q <= 1) of xs by the nearest-rank
// method, or 0 for an empty slice. xs is sorted in place.
func Quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	slices.Sort(xs)
	rank := int(math.Ceil(q*float64(len(xs)) - 1e-9))
	return xs[min(max(rank-1, 0), len(xs)-1)]
}

// Millis converts a duration to fractional milliseconds.
func Millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// MedianRatio returns the median over rounds of a[i]/b[i] (rounds where
// either is missing or zero are skipped) and whether there was any.
func MedianRatio(a, b []float64) (float64, bool) {
	var rs []float64
	for i := range min(len(a), len(b)) {
		if a[i] > 0 && b[i] > 0 {
			rs = append(rs, a[i]/b[i])
		}
	}
	return median(rs), len(rs) > 0
}

// MedianDiff returns the median over rounds of a[i]-b[i] (rounds where
// either is zero are skipped) and whether there was any.
func MedianDiff(a, b []float64) (float64, bool) {
	var ds []float64
	for i := range min(len(a), len(b)) {
		if a[i] > 0 && b[i] > 0 {
			ds = append(ds, a[i]-b[i])
		}
	}
	return median(ds), len(ds) > 0
}

// median is the middle value (mean of the two middle ones for an even
// count), 0 for none. xs is sorted in place.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	slices.Sort(xs)
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}

// Scale is the whole thaw binary (`thaw local`, with its Envoy) holding many
// idle revisions: no backend runs, so what it measures is thaw's own cost
// per revision (registry, xDS, autoscaler loops, activator, metrics).
type Scale struct {
	Revisions int `json:"revisions"`
	// ReadySeconds is from starting thaw to its /readyz (Envoy ACKed the
	// complete first configuration).
	ReadySeconds float64 `json:"readySeconds"`
	// ThawRSSMiB is thaw's resident memory after SettleSeconds;
	// ThawPeakRSSMiB its high-water mark (VmHWM).
	ThawRSSMiB     float64 `json:"thawRSSMiB"`
	ThawPeakRSSMiB float64 `json:"thawPeakRSSMiB"`
	// EnvoyRSSMiB is the Envoy thaw started, for comparison.
	EnvoyRSSMiB float64 `json:"envoyRSSMiB"`
	// Go runtime figures from thaw's /metrics.
	HeapInuseMiB  float64 `json:"heapInuseMiB"`
	StackInuseMiB float64 `json:"stackInuseMiB"`
	Goroutines    float64 `json:"goroutines"`
	SettleSeconds float64 `json:"settleSeconds"`
	// HeapLiveMiB is the Go heap in use right after a forced collection
	// (/debug/pprof/heap?gc=1; 0 where thaw serves no profiles): what
	// thaw keeps, where HeapInuseMiB, sampled mid-cycle, also holds
	// garbage up to the collector's goal (about twice the live heap).
	HeapLiveMiB float64 `json:"heapLiveMiB,omitempty"`
}

// Abuse is thaw's memory under hostile clients of its gRPC port (issue 13):
// each step is one abuse from a real gRPC client on loopback against the
// real `thaw local`, with a real request through Envoy afterwards.
type Abuse struct {
	// BaselineRSSMiB is thaw's resident memory before the first step.
	BaselineRSSMiB float64     `json:"baselineRSSMiB"`
	Steps          []AbuseStep `json:"steps"`
}

// AbuseStep is one abuse and what thaw did about it.
type AbuseStep struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	// RSSMiB and HeapInuseMiB are thaw's resident memory and Go heap in use
	// right after the abuse was sent (streams still open).
	RSSMiB       float64 `json:"rssMiB"`
	HeapInuseMiB float64 `json:"heapInuseMiB"`
	// AfterRSSMiB and AfterHeapInuseMiB are the same once the bound acted
	// (AfterSeconds later).
	AfterRSSMiB       float64 `json:"afterRSSMiB"`
	AfterHeapInuseMiB float64 `json:"afterHeapInuseMiB"`
	AfterSeconds      float64 `json:"afterSeconds"`
	// Refused counts the abusive streams thaw refused or closed, of Sent.
	Sent    int `json:"sent"`
	Refused int `json:"refused"`
	// RealRequestOK: a request to a known revision through Envoy answered
	// 200 after the abuse.
	RealRequestOK bool `json:"realRequestOK"`
}

// EnvoyGateway is thaw as Envoy Gateway's extension (bench scenario eg):
// the warm path through EG's Envoy to a Revision against EG routing to the
// same backend process as a plain Backend (one constant-rate attack
// alternating between them, in Rounds rounds; then closed-loop
// throughput), and cold starts of Revisions at zero through EG's Envoy.
type EnvoyGateway struct {
	RateRPS           int     `json:"rateRPS"`
	Rounds            int     `json:"rounds"`
	RoundSeconds      float64 `json:"roundSeconds"`
	Concurrency       int     `json:"concurrency"`
	ThroughputSeconds float64 `json:"throughputSeconds"`
	ThroughputRounds  int     `json:"throughputRounds"`
	Plain             Side    `json:"plain"`
	Revision          Side    `json:"revision"`
	// Cold is one cold start per Revision (StartupDelayMs 0).
	Cold Cold `json:"cold"`
	// AddedRevisions idle Revisions were added at once; AddedReadyMs later
	// EG's Envoy had a warm cluster for each. EnvoyRSSBeforeBytes and
	// EnvoyRSSAfterBytes are EG's Envoy's resident memory around that.
	AddedRevisions      int     `json:"addedRevisions,omitempty"`
	AddedReadyMs        float64 `json:"addedReadyMs,omitempty"`
	EnvoyRSSBeforeBytes int64   `json:"envoyRSSBeforeBytes,omitempty"`
	EnvoyRSSAfterBytes  int64   `json:"envoyRSSAfterBytes,omitempty"`
	// AddedHookCalls hook calls thaw answered meanwhile, in AddedHookSeconds
	// of its own time in all (thaw_eg_hook_duration_seconds).
	AddedHookCalls   int     `json:"addedHookCalls,omitempty"`
	AddedHookSeconds float64 `json:"addedHookSeconds,omitempty"`
}
