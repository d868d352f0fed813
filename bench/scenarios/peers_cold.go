package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/thaw-dev/thaw/bench/peers"
	"github.com/thaw-dev/thaw/bench/results"
)

// Cold starts beside KEDA. thaw detects its backend's readiness itself
// (it probes the new process); KEDA's interceptor waits for the backend's
// EndpointSlice to turn ready, a signal the benchmark gives itself here.
const (
	thawColdIncludes = "response end − the moment the new backend process listened: thaw's readiness detection (probing the process), the activator releasing the held request, Envoy and the activator proxying it"
	kedaColdIncludes = "response end − the moment the benchmark marked the EndpointSlice ready: the API server's write and watch, the interceptor's informer, releasing the held request, Envoy and the interceptor proxying it; the readiness signal itself (a kubelet probe, the EndpointSlice controller) is not included"
)

// coldRevs are the thaw revisions the cold starts wake, one per sample
// (initial-scale 0), plus one warm-up revision at index 0.
func coldRevs(n int) []rev {
	zero := map[string]string{"initial-scale": "0"}
	revs := []rev{{name: "coldwarmup", autoscaling: zero}}
	for i := range n {
		revs = append(revs, rev{name: fmt.Sprintf("cold-%d", i), autoscaling: zero})
	}
	return revs
}

// thawCold wakes each of revs[1:] once (revs[0] first, not counted) and
// returns the overhead figures.
func thawCold(e *env, th *thaw, revs []rev) results.PeerCold {
	out := results.PeerCold{Name: "thaw (proxy mode at zero)", Includes: thawColdIncludes}
	c := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DisableCompression: true}}
	var ms []float64
	for i, r := range revs {
		s, err := coldOnce(e.ctx, c, th, r)
		if i == 0 {
			continue
		}
		out.N++
		if err != nil {
			out.Errors++
			if len(out.Fails) < 5 {
				out.Fails = append(out.Fails, err.Error())
			}
			continue
		}
		ms = append(ms, s.OverheadMs)
	}
	return summarizeCold(out, ms)
}

// kedaCold runs n cold starts through the front Envoy and the interceptor:
// the EndpointSlice is marked not ready, a request is sent and held, and
// after holdFor the benchmark marks the slice ready and times the rest.
func kedaCold(e *env, api *peers.KedaAPI, frontURL string, backendPort, n int) results.PeerCold {
	out := results.PeerCold{Name: "Envoy + KEDA interceptor", Includes: kedaColdIncludes}
	c := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DisableCompression: true}}
	var ms []float64
	for range n {
		out.N++
		d, err := kedaColdOnce(e.ctx, c, api, frontURL, backendPort)
		if err != nil {
			out.Errors++
			if len(out.Fails) < 5 {
				out.Fails = append(out.Fails, err.Error())
			}
			continue
		}
		ms = append(ms, results.Millis(d))
	}
	// Leave the backend ready for whatever runs next.
	if err := api.SetReady(e.ctx, backendPort, true); err != nil {
		out.Fails = append(out.Fails, err.Error())
	}
	return summarizeCold(out, ms)
}

// holdFor is how long a KEDA cold-start request is held before the
// benchmark marks the backend ready (the "backend start").
const holdFor = 300 * time.Millisecond

func kedaColdOnce(ctx context.Context, c *http.Client, api *peers.KedaAPI, frontURL string, backendPort int) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := api.SetReady(ctx, backendPort, false); err != nil {
		return 0, err
	}
	// The informer sees the change within milliseconds; give it ample time.
	time.Sleep(500 * time.Millisecond)
	type answer struct {
		end    time.Time
		status int
		cold   string
		err    error
	}
	done := make(chan answer, 1)
	go func() {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, frontURL+"/", nil)
		if err != nil {
			done <- answer{err: err}
			return
		}
		req.Host = peers.KedaHost
		resp, err := c.Do(req)
		if err != nil {
			done <- answer{err: err}
			return
		}
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		done <- answer{end: time.Now(), status: resp.StatusCode, cold: resp.Header.Get("X-KEDA-HTTP-Cold-Start"), err: err}
	}()
	select {
	case a := <-done:
		return 0, fmt.Errorf("answered before the backend was ready (status %d, %v)", a.status, a.err)
	case <-time.After(holdFor):
	}
	ready := time.Now()
	if err := api.SetReady(ctx, backendPort, true); err != nil {
		return 0, err
	}
	a := <-done
	switch {
	case a.err != nil:
		return 0, a.err
	case a.status != http.StatusOK:
		return 0, fmt.Errorf("status %d", a.status)
	case a.cold != "true":
		return 0, fmt.Errorf("interceptor did not hold the request (X-KEDA-HTTP-Cold-Start %q)", a.cold)
	}
	return a.end.Sub(ready), nil
}

func summarizeCold(out results.PeerCold, ms []float64) results.PeerCold {
	out.P50Ms, out.P90Ms, out.MaxMs = results.Quantile(ms, 0.5), results.Quantile(ms, 0.9), results.Quantile(ms, 1)
	return out
}
