package revision

import (
	"time"

	"github.com/thaw-dev/thaw/wake"
)

// Metric is the load signal a revision scales on.
type Metric string

const (
	// MetricConcurrency scales on requests in flight per pod.
	MetricConcurrency Metric = "concurrency"
	// MetricRPS scales on requests per second per pod.
	MetricRPS Metric = "rps"
)

// Protocol is the HTTP protocol Envoy speaks to a revision's backends.
type Protocol string

const (
	// ProtocolHTTP1 is HTTP/1.1 (the default). Upgrades such as WebSocket
	// work over it.
	ProtocolHTTP1 Protocol = "http1"
	// ProtocolH2C is cleartext HTTP/2 with prior knowledge, as gRPC servers
	// and other h2c backends expect.
	ProtocolH2C Protocol = "h2c"
)

// Defaults, following Knative Serving's autoscaler configuration unless noted.
const (
	DefaultConcurrencyTarget           = 100.0
	DefaultRPSTarget                   = 200.0
	DefaultTargetUtilizationPercentage = 70.0
	DefaultInitialScale                = 1
	DefaultActivationScale             = 1
	DefaultStableWindow                = 60 * time.Second
	DefaultPanicWindowPercentage       = 10.0
	DefaultPanicThresholdPercentage    = 200.0
	DefaultMaxScaleUpRate              = 1000.0
	DefaultMaxScaleDownRate            = 2.0
	DefaultTargetBurstCapacity         = 211.0
	DefaultScaleToZeroGracePeriod      = 30 * time.Second
	// DefaultHoldTimeout is how long the activator holds a request for a
	// cold revision before answering 503 (thaw's own default).
	DefaultHoldTimeout = 60 * time.Second
	// DefaultQueueDepth is how many requests the activator holds per
	// revision before answering 503 (Knative's activator breaker uses 10,000).
	DefaultQueueDepth = 10000
	// DefaultActivationTimeout is how long a revision woken from zero may
	// take to produce a ready backend before it is scaled back to 0.
	DefaultActivationTimeout = 10 * time.Minute
	// DefaultRequestTimeout bounds how long a backend may take to answer
	// one request once it reached the backend (Knative's revision timeout
	// default, 300 s).
	DefaultRequestTimeout = 300 * time.Second
	// MaxRequestTimeout is the largest request-timeout a revision may set.
	MaxRequestTimeout = 24 * time.Hour
)

// Spec is a revision's routing and autoscaling configuration. Durations are
// time.Duration; percentages are in percent (70 means 70%). Build one with
// DefaultSpec and ParseSettings, then check it with Validate.
type Spec struct {
	// Hosts are the HTTP authorities (host names, optionally "*.suffix")
	// Envoy routes to this revision. At least one; unique across revisions.
	Hosts []string
	// Protocol is what Envoy speaks to the backends: ProtocolHTTP1
	// (default) or ProtocolH2C.
	Protocol Protocol
	// Port is the backends' HTTP port (1..65535). Platforms that discover
	// ports per backend use Backend.Port instead.
	Port int32
	// ContainerConcurrency is the hard limit of requests in flight per
	// backend (0..1000, 0 = unlimited). The activator enforces it.
	ContainerConcurrency int
	// Metric is what the decider scales on.
	Metric Metric
	// Target is the desired concurrency (requests per pod) or RPS (requests
	// per second per pod), > 0.
	Target float64
	// TargetUtilizationPercentage scales Target down to leave headroom
	// (1..100).
	TargetUtilizationPercentage float64
	// MinScale is the lowest replica count (>= 0; 0 allows scale to zero).
	MinScale int32
	// MaxScale is the highest replica count (>= 0; 0 = unlimited).
	MaxScale int32
	// InitialScale is the replica count a new revision starts with (>= 0).
	InitialScale int32
	// ActivationScale is the minimum replica count when waking from zero
	// (>= 1).
	ActivationScale int32
	// StableWindow is the averaging window of stable mode (6s..1h).
	StableWindow time.Duration
	// PanicWindowPercentage is the panic window as a share of the stable
	// window (1..100).
	PanicWindowPercentage float64
	// PanicThresholdPercentage is the panic desired / ready ratio that enters
	// panic mode (110..1000).
	PanicThresholdPercentage float64
	// ScaleDownDelay holds scale-downs back for this long (0..1h).
	ScaleDownDelay time.Duration
	// MaxScaleUpRate caps growth to ceil(rate × ready) per decision (> 1).
	MaxScaleUpRate float64
	// MaxScaleDownRate caps shrinking to floor(ready / rate) per decision
	// (> 1).
	MaxScaleDownRate float64
	// TargetBurstCapacity is the spare capacity (requests) to keep before the
	// activator leaves the path: -1 keeps it always in the path, 0 uses it
	// only at zero scale (>= -1).
	TargetBurstCapacity float64
	// ScaleToZeroGracePeriod is the minimum time in confirmed proxy mode
	// before replicas go to 0 (0..1h).
	ScaleToZeroGracePeriod time.Duration
	// ScaleToZeroPodRetention keeps the last pod for this long after the
	// revision became idle (0..1h).
	ScaleToZeroPodRetention time.Duration
	// ActivationTimeout scales a revision back to 0 when waking it produced
	// no ready backend within this time (1s..1h).
	ActivationTimeout time.Duration
	// HoldTimeout is how long the activator holds one request (1s..15m).
	HoldTimeout time.Duration
	// QueueDepth is how many requests the activator holds at once
	// (1..1,000,000).
	QueueDepth int
	// RequestTimeout bounds how long a backend may take to send its whole
	// answer after the request reached it (1s..24h; default 300 s). Time
	// spent held by the activator does not count. An upgraded connection
	// (WebSocket) or a request whose body is still streaming is not bound
	// by it; IdleTimeout bounds those.
	RequestTimeout time.Duration
	// IdleTimeout closes a request or connection with no bytes in either
	// direction for this long (0..24h; 0, the default, = no idle limit).
	IdleTimeout time.Duration
	// TrafficPercent is the share of each of its hosts' requests this
	// revision receives when other revisions list the same host (a traffic
	// split): 0..100 percent. nil (the default): no split; a host another
	// revision also lists is then a host collision. The revisions sharing
	// a host must all set it, with a sum of 100 (see docs/traffic-splitting.md).
	TrafficPercent *int32
	// Tag, when set, gives the revision one more host that routes only to
	// it, whatever the split: TagHost ("<tag>-<first host>"). A DNS label
	// (lower case letters, digits and '-', at most 63 characters); "" = no
	// tag host.
	Tag string
	// Wake is the revision's wake policy (nil, the default: none): rules
	// for requests that must not wake it at zero, the waiting page, the
	// cold-start header and warm windows (see package wake). Immutable
	// once published.
	Wake *wake.Policy
}

// DefaultSpec returns a Spec with every autoscaling setting at its default
// and no hosts or port.
func DefaultSpec() Spec {
	return Spec{
		Protocol:                    ProtocolHTTP1,
		Metric:                      MetricConcurrency,
		TargetUtilizationPercentage: DefaultTargetUtilizationPercentage,
		InitialScale:                DefaultInitialScale,
		ActivationScale:             DefaultActivationScale,
		StableWindow:                DefaultStableWindow,
		PanicWindowPercentage:       DefaultPanicWindowPercentage,
		PanicThresholdPercentage:    DefaultPanicThresholdPercentage,
		MaxScaleUpRate:              DefaultMaxScaleUpRate,
		MaxScaleDownRate:            DefaultMaxScaleDownRate,
		TargetBurstCapacity:         DefaultTargetBurstCapacity,
		ScaleToZeroGracePeriod:      DefaultScaleToZeroGracePeriod,
		ActivationTimeout:           DefaultActivationTimeout,
		HoldTimeout:                 DefaultHoldTimeout,
		QueueDepth:                  DefaultQueueDepth,
		RequestTimeout:              DefaultRequestTimeout,
	}
}

// EffectiveTarget returns Target, or when it is unset (0) the default for the
// metric, capped at ContainerConcurrency for the concurrency metric (as
// Knative does when containerConcurrency is set).
func (s *Spec) EffectiveTarget() float64 {
	if s.Target > 0 {
		return s.Target
	}
	if s.Metric == MetricRPS {
		return DefaultRPSTarget
	}
	if s.ContainerConcurrency > 0 && float64(s.ContainerConcurrency) < DefaultConcurrencyTarget {
		return float64(s.ContainerConcurrency)
	}
	return DefaultConcurrencyTarget
}

// PanicWindow returns the panic window: StableWindow × PanicWindowPercentage
// / 100, rounded down to whole seconds and at least one second.
func (s *Spec) PanicWindow() time.Duration {
	w := time.Duration(float64(s.StableWindow) * s.PanicWindowPercentage / 100)
	w = w.Truncate(time.Second)
	if w < time.Second {
		w = time.Second
	}
	return w
}

// TotalPerPod returns the requests (or RPS) one pod is expected to take at
// full target: EffectiveTarget × TargetUtilizationPercentage / 100.
func (s *Spec) TotalPerPod() float64 {
	return s.EffectiveTarget() * s.TargetUtilizationPercentage / 100
}
