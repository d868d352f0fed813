package results

// Protocols is the protocols scenario: cold-start overhead of a gRPC unary
// call and of a WebSocket upgrade, and the gRPC warm path (serve mode vs a
// static Envoy). A part that could not run stays empty.
type Protocols struct {
	// Load1Start and Load1End are the 1-minute load averages around the
	// scenario.
	Load1Start float64 `json:"load1Start"`
	Load1End   float64 `json:"load1End"`
	// Cold has one entry per kind of first request ("grpc", "websocket",
	// and "http" as a reference measured in the same run).
	Cold []ProtocolCold `json:"cold,omitempty"`
	// GRPCWarm is the gRPC warm-path comparison (nil: not run).
	GRPCWarm *GRPCWarm `json:"grpcWarm,omitempty"`
}

// ProtocolCold is the cold-start overhead for one kind of first request,
// with the same definition as Cold: the response's end minus the moment the
// backend began listening. StartupDelayMs is the backend's startup delay.
type ProtocolCold struct {
	// Kind is "grpc", "websocket" or "http".
	Kind string `json:"kind"`
	// Reference is true for the plain HTTP row, which only shows what the
	// cold-start scenario's request costs under the same load.
	Reference bool `json:"reference,omitempty"`
	// Request says what the one measured request is and where its end is
	// taken (for the report).
	Request string `json:"request"`
	// Listening says where the backend's listening time comes from.
	Listening string `json:"listening"`
	Cold
}

// GRPCWarm is the gRPC warm path: grpc-go unary calls at a constant rate
// per side, one attack alternating call by call between a static Envoy and
// thaw's serve mode, both routing over h2c to the same backend process, in
// Rounds rounds of RoundSeconds. Static and Serve carry the latency of
// successful calls (Latency.Errors counts failed ones) and per-round p50
// and p99; their throughput fields stay zero.
type GRPCWarm struct {
	// RateRPS is the calls per second sent to each side (2 × RateRPS in all).
	RateRPS      int     `json:"rateRPS"`
	Rounds       int     `json:"rounds"`
	RoundSeconds float64 `json:"roundSeconds"`
	// Workers is the most calls in flight the load generator allows (both
	// sides together); when all are busy the schedule slips and the sent
	// rate (Latency.RateRPS) falls below RateRPS.
	Workers int `json:"workers"`
	// Connections is the number of HTTP/2 connections per side.
	Connections int `json:"connections"`
	// Concurrency calls stay in flight per side in the closed-loop rounds
	// (ThroughputRounds of RoundSeconds, the sides back to back), which
	// measure calls/s and Envoy CPU per call.
	Concurrency      int  `json:"concurrency,omitempty"`
	ThroughputRounds int  `json:"throughputRounds,omitempty"`
	Static           Side `json:"static"`
	Serve            Side `json:"serve"`
}
