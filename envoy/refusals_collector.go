package envoy

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// refusalReadTimeout bounds one read of Envoy's admin /stats.
const refusalReadTimeout = 2 * time.Second

// refusalScrapeWait bounds how long a scrape waits for a read of Envoy's
// admin /stats (loopback: it answers in milliseconds) before it exports
// the values of the last read that succeeded.
const refusalScrapeWait = 500 * time.Millisecond

// RefusalCollector exports RefusalCounters of the Envoy whose admin server
// is at adminURL as thaw_envoy_http_refusals_total{counter}, and counts
// the reads of Envoy's admin server that failed (transport error, a
// timeout after 2 s, a non-200 status or a malformed body) as
// thaw_envoy_http_refusals_read_failures_total. It is for `thaw local`,
// where thaw runs Envoy and its admin port is on loopback.
//
// A scrape never waits on Envoy for long (issue 31: a stopped Envoy must
// not stall thaw's /metrics): it starts a read unless one is in flight
// (at most one at a time), waits for it until at most 500 ms after the
// read started, and exports the values of the last read that succeeded. After a failed read it does not
// wait at all until a read succeeds again; a failed or pending read
// exports the last values, none before the first success.
func RefusalCollector(adminURL string) prometheus.Collector {
	return newRefusalCollector(adminURL, &http.Client{Timeout: refusalReadTimeout})
}

func newRefusalCollector(adminURL string, c *http.Client) *refusalCollector {
	return &refusalCollector{url: adminURL, client: c,
		desc: prometheus.NewDesc("thaw_envoy_http_refusals_total",
			"Counters of Envoy's listener thaw_http that explain requests Envoy answered itself (docs/protocols.md), read from Envoy's admin server at scrape time (the last read that succeeded when Envoy does not answer within 500 ms).",
			[]string{"counter"}, nil),
		failDesc: prometheus.NewDesc("thaw_envoy_http_refusals_read_failures_total",
			"Reads of Envoy's admin /stats for thaw_envoy_http_refusals_total that failed (transport error, 2 s timeout, status, body).",
			nil, nil)}
}

type refusalCollector struct {
	url      string
	client   *http.Client
	desc     *prometheus.Desc
	failDesc *prometheus.Desc

	mu sync.Mutex
	// inFlight is the read in flight; nil when none is.
	inFlight *refusalRead
	// last holds the values of the last read that succeeded (never
	// written after it is stored; nil before the first success).
	last map[string]float64
	// failing is set when the last read failed: scrapes do not wait.
	failing  bool
	failures float64
}

var _ prometheus.Collector = (*refusalCollector)(nil)

// Describe sends the two descriptors.
func (c *refusalCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.desc
	ch <- c.failDesc
}

// Collect starts a read of Envoy's counters unless one is in flight,
// waits for it at most until refusalScrapeWait after it started (not at
// all while reads fail), and sends the last values read.
func (c *refusalCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	r := c.inFlight
	if r == nil {
		r = &refusalRead{done: make(chan struct{}), late: make(chan struct{})}
		r.timer = time.AfterFunc(refusalScrapeWait, func() { close(r.late) })
		c.inFlight = r
		go c.read(r)
	}
	wait := !c.failing
	c.mu.Unlock()
	if wait {
		select {
		case <-r.done:
		case <-r.late:
		}
	}
	c.mu.Lock()
	vals, failures := c.last, c.failures
	c.mu.Unlock()
	for _, name := range RefusalCounters {
		if v, ok := vals[name]; ok {
			ch <- prometheus.MustNewConstMetric(c.desc, prometheus.CounterValue, v, name)
		}
	}
	ch <- prometheus.MustNewConstMetric(c.failDesc, prometheus.CounterValue, failures)
}

// refusalRead is one read of Envoy's counters.
type refusalRead struct {
	// done is closed when the read ended (its outcome stored).
	done chan struct{}
	// late is closed refusalScrapeWait after the read started: scrapes
	// stop waiting for it then, whenever they came.
	late  chan struct{}
	timer *time.Timer
}

// read reads Envoy's counters once (bounded by refusalReadTimeout), stores
// the outcome and closes r.done.
func (c *refusalCollector) read(r *refusalRead) {
	ctx, cancel := context.WithTimeout(context.Background(), refusalReadTimeout)
	vals, err := Refusals(ctx, c.client, c.url)
	cancel()
	c.mu.Lock()
	if err != nil {
		c.failures++
		c.failing = true
	} else {
		c.last, c.failing = vals, false
	}
	c.inFlight = nil
	c.mu.Unlock()
	r.timer.Stop()
	close(r.done)
}
