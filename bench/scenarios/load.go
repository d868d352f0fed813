package main

import (
	"math"
	"net/http"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/thaw-dev/thaw/bench/results"
)

// target is one way to reach a backend: a base URL and a Host header.
type target struct {
	name string
	url  string
	host string
	// client keeps its connections between attacks, so each round starts
	// warm.
	client *http.Client
}

func newTarget(name, baseURL, host string, maxConns int) *target {
	return &target{name: name, url: baseURL + "/?side=" + name, host: host, client: &http.Client{
		Timeout: 60 * time.Second,
		Transport: &http.Transport{
			MaxIdleConns: maxConns, MaxIdleConnsPerHost: maxConns, IdleConnTimeout: 90 * time.Second,
			DisableCompression: true,
		},
	}}
}

func (t *target) targeter() vegeta.Targeter {
	return vegeta.NewStaticTargeter(vegeta.Target{Method: http.MethodGet, URL: t.url,
		Header: http.Header{"Host": []string{t.host}}})
}

// attacker builds a vegeta attacker on the target's client; bodies are
// drained, not kept.
func (t *target) attacker(opts ...func(*vegeta.Attacker)) *vegeta.Attacker {
	return vegeta.NewAttacker(append([]func(*vegeta.Attacker){
		vegeta.Client(t.client), vegeta.MaxBody(0), vegeta.Redirects(vegeta.NoFollow),
	}, opts...)...)
}

// sample accumulates results of one side over several attacks.
type sample struct {
	latencies []float64 // ms, successful requests
	requests  int
	errors    int
	errs      map[string]int
	sentSpan  time.Duration // sum of the attacks' send durations
}

func (s *sample) add(r *vegeta.Result) {
	s.requests++
	if r.Error != "" || r.Code != http.StatusOK {
		s.errors++
		if s.errs == nil {
			s.errs = map[string]int{}
		}
		if len(s.errs) < 10 {
			s.errs[r.Error]++
		}
		return
	}
	s.latencies = append(s.latencies, results.Millis(r.Latency))
}

// merge adds o's results to s.
func (s *sample) merge(o *sample) {
	s.latencies = append(s.latencies, o.latencies...)
	s.requests += o.requests
	s.errors += o.errors
	s.sentSpan += o.sentSpan
	for k, v := range o.errs {
		if s.errs == nil {
			s.errs = map[string]int{}
		}
		s.errs[k] += v
	}
}

func (s *sample) latency() results.Latency {
	l := results.Latency{Requests: s.requests, Errors: s.errors}
	if s.sentSpan > 0 {
		l.RateRPS = float64(s.requests) / s.sentSpan.Seconds()
	}
	l.P50Ms = results.Quantile(s.latencies, 0.50)
	l.P90Ms = results.Quantile(s.latencies, 0.90)
	l.P99Ms = results.Quantile(s.latencies, 0.99)
	l.MaxMs = results.Quantile(s.latencies, 1)
	return l
}

// constantRate sends rate requests/s to t for d (vegeta's constant pacer)
// and adds every result to s.
func constantRate(t *target, rate int, d time.Duration, s *sample) {
	atk := t.attacker(vegeta.Workers(uint64(max(rate/50, 10))))
	var m vegeta.Metrics
	for r := range atk.Attack(t.targeter(), vegeta.Rate{Freq: rate, Per: time.Second}, d, t.name) {
		m.Add(r)
		s.add(r)
	}
	m.Close()
	s.sentSpan += m.Duration
}

// pairedRate sends rate requests/s to each of a and b for d in one vegeta
// attack whose targeter alternates between them request by request (2 x
// rate in all), so both sides meet the same moment-to-moment conditions of
// the machine. Results are told apart by URL and added to sa and sb when
// they are not nil (nil: warm-up).
func pairedRate(a, b *target, rate int, d time.Duration, sa, sb *sample) {
	atk := a.attacker(vegeta.Workers(uint64(max(rate/25, 10))))
	tr := vegeta.NewStaticTargeter(
		vegeta.Target{Method: http.MethodGet, URL: a.url, Header: http.Header{"Host": []string{a.host}}},
		vegeta.Target{Method: http.MethodGet, URL: b.url, Header: http.Header{"Host": []string{b.host}}})
	var m vegeta.Metrics
	for r := range atk.Attack(tr, vegeta.Rate{Freq: 2 * rate, Per: time.Second}, d, a.name+"+"+b.name) {
		m.Add(r)
		switch {
		case sa == nil || sb == nil:
		case r.URL == a.url:
			sa.add(r)
		default:
			sb.add(r)
		}
	}
	m.Close()
	if sa != nil && sb != nil {
		sa.sentSpan += m.Duration
		sb.sentSpan += m.Duration
	}
}

// closedLoop keeps conc requests in flight against t for d (vegeta with an
// unlimited rate and conc workers) and returns successful requests per
// second and the error count.
func closedLoop(t *target, conc int, d time.Duration) (float64, int) {
	atk := t.attacker(vegeta.Workers(uint64(conc)), vegeta.MaxWorkers(uint64(conc)))
	var m vegeta.Metrics
	for r := range atk.Attack(t.targeter(), vegeta.Rate{Freq: 0}, d, t.name) {
		m.Add(r)
	}
	m.Close()
	errs := int(m.Requests) - int(float64(m.Requests)*m.Success+0.5)
	return m.Throughput, errs
}

// burst sends n requests at once (n vegeta workers, a pacer that releases
// all n without waiting) and returns every result.
func burst(t *target, n int) []*vegeta.Result {
	atk := t.attacker(vegeta.Workers(uint64(n)), vegeta.MaxWorkers(uint64(n)), vegeta.Timeout(90*time.Second))
	out := make([]*vegeta.Result, 0, n)
	for r := range atk.Attack(t.targeter(), allAtOnce{n: uint64(n)}, 0, t.name) {
		out = append(out, r)
	}
	return out
}

// allAtOnce is a vegeta pacer that releases n hits without waiting, then
// stops.
type allAtOnce struct{ n uint64 }

var _ vegeta.Pacer = allAtOnce{}

func (p allAtOnce) Pace(_ time.Duration, hits uint64) (time.Duration, bool) { return 0, hits >= p.n }

// Rate is unbounded while hits remain.
func (p allAtOnce) Rate(time.Duration) float64 { return math.Inf(1) }
