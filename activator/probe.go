package activator

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"time"

	"go.uber.org/zap"
)

// ProbeOptions configures the active probe of a new backend before it takes
// traffic from the activator (Knative's activator probes pods the same way
// so that a pod that is Ready in the API but not yet reachable does not get
// requests).
type ProbeOptions struct {
	// Path, when set, probes with HTTP GET http://<backend><Path> and wants a
	// status 200..399. Empty probes by opening a TCP connection.
	Path string
	// Timeout bounds one attempt (default 1 s).
	Timeout time.Duration
	// Interval is the pause between failed attempts (default 100 ms).
	// Attempts continue until one succeeds or the backend leaves.
	Interval time.Duration
}

func (o ProbeOptions) withDefaults() ProbeOptions {
	if o.Timeout <= 0 {
		o.Timeout = time.Second
	}
	if o.Interval <= 0 {
		o.Interval = 100 * time.Millisecond
	}
	return o
}

// probeOnce makes one attempt against addr ("ip:port").
func (o ProbeOptions) probeOnce(ctx context.Context, client *http.Client, addr string) error {
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	if o.Path == "" {
		var d net.Dialer
		c, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return fmt.Errorf("probe %s: %w", addr, err)
		}
		return c.Close()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+o.Path, nil)
	if err != nil {
		return fmt.Errorf("probe %s: %w", addr, err)
	}
	req.Header.Set("User-Agent", "thaw-activator-probe")
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("probe %s: %w", addr, err)
	}
	resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 399 {
		return fmt.Errorf("probe %s: status %d", addr, resp.StatusCode)
	}
	return nil
}

// probeResult reports that a backend answered a probe.
type probeResult struct {
	rs   *revState
	addr string
}

// probe retries until addr answers, then reports on done. It gives up
// silently when ctx ends (backend gone or Run stopped).
func (a *Activator) probe(ctx context.Context, rs *revState, addr string, done chan<- probeResult) {
	o := *a.opts.Probe
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	for attempt := 1; ; attempt++ {
		err := o.probeOnce(ctx, client, addr)
		if err == nil {
			select {
			case done <- probeResult{rs: rs, addr: addr}:
			case <-ctx.Done():
			}
			return
		}
		if ctx.Err() != nil {
			return
		}
		if attempt == 1 || attempt%50 == 0 {
			rs.log().Debug("backend probe failed", zap.String("backend", addr), zap.Int("attempt", attempt), zap.Error(err))
		}
		t := a.opts.Clock.NewTimer(o.Interval)
		select {
		case <-t.C():
		case <-ctx.Done():
			t.Stop()
			return
		}
	}
}
