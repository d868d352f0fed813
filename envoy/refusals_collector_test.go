package envoy

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// stallTransport stands in for Envoy's admin server: it answers /stats
// with downstream_rq_4xx, or, while stalled (a stopped Envoy), holds the
// request until its context ends.
type stallTransport struct {
	mu      sync.Mutex
	stalled bool
	rq4xx   int
	calls   atomic.Int32
	ended   atomic.Int32
}

func (s *stallTransport) set(stalled bool, rq4xx int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stalled, s.rq4xx = stalled, rq4xx
}

func (s *stallTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	s.calls.Add(1)
	defer s.ended.Add(1)
	s.mu.Lock()
	stalled, n := s.stalled, s.rq4xx
	s.mu.Unlock()
	if stalled {
		<-req.Context().Done()
		return nil, req.Context().Err()
	}
	body := fmt.Sprintf(`{"stats":[{"name":"http.thaw_http.downstream_rq_4xx","value":%d}]}`, n)
	return &http.Response{StatusCode: http.StatusOK, Body: io.NopCloser(strings.NewReader(body)), Request: req}, nil
}

// scrape gathers reg and returns downstream_rq_4xx (-1 when absent), the
// read failures and the (bubble) time the scrape took.
func scrape(t *testing.T, reg *prometheus.Registry) (rq4xx, failures float64, took time.Duration) {
	t.Helper()
	start := time.Now()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	rq4xx = -1
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			switch mf.GetName() {
			case "thaw_envoy_http_refusals_total":
				if m.GetLabel()[0].GetValue() == "downstream_rq_4xx" {
					rq4xx = m.GetCounter().GetValue()
				}
			case "thaw_envoy_http_refusals_read_failures_total":
				failures = m.GetCounter().GetValue()
			}
		}
	}
	return rq4xx, failures, time.Since(start)
}

// TestRefusalCollectorStalledEnvoy (issue 31): a scrape does not wait on a
// stopped Envoy past refusalScrapeWait after the read started, not at all
// once a read failed; it exports the last values read and counts the
// failed reads; one read at a time; fresh values again once Envoy answers.
func TestRefusalCollectorStalledEnvoy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := &stallTransport{rq4xx: 1}
		c := newRefusalCollector("http://envoy.invalid", &http.Client{Transport: tr, Timeout: refusalReadTimeout})
		reg := prometheus.NewPedanticRegistry()
		reg.MustRegister(c)
		check := func(step string, got, failures float64, took time.Duration, want, wantFailures float64, wantTook time.Duration) {
			t.Helper()
			if got != want || failures != wantFailures || took != wantTook {
				t.Fatalf("%s: downstream_rq_4xx=%v failures=%v took %v, want %v %v %v", step, got, failures, took, want, wantFailures, wantTook)
			}
		}

		got, failures, took := scrape(t, reg)
		check("Envoy answers", got, failures, took, 1, 0, 0)

		tr.set(true, 1)
		got, failures, took = scrape(t, reg)
		check("Envoy stopped, first scrape", got, failures, took, 1, 0, refusalScrapeWait)
		if n := tr.calls.Load() - tr.ended.Load(); n != 1 {
			t.Fatalf("reads in flight after the scrape = %d, want 1 (the scrape returned while Envoy holds the read)", n)
		}
		got, failures, took = scrape(t, reg)
		check("Envoy stopped, second scrape", got, failures, took, 1, 0, 0)
		if n := tr.calls.Load(); n != 2 {
			t.Fatalf("reads = %d, want 2 (one at a time)", n)
		}

		time.Sleep(refusalReadTimeout)
		synctest.Wait()
		got, failures, took = scrape(t, reg)
		check("after a failed read", got, failures, took, 1, 1, 0)
		synctest.Wait() // the read that scrape started is held by the stopped Envoy

		tr.set(false, 2)
		time.Sleep(refusalReadTimeout) // that read fails
		synctest.Wait()
		got, failures, took = scrape(t, reg) // starts a read, does not wait for it
		check("Envoy runs again, first scrape", got, failures, took, 1, 2, 0)
		synctest.Wait()
		got, failures, took = scrape(t, reg)
		check("Envoy runs again", got, failures, took, 2, 2, 0)
	})
}
