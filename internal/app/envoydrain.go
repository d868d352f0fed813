package app

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"
)

// drainPoll is how often DrainListeners reads Envoy's active request count.
const drainPoll = 50 * time.Millisecond

// DrainListeners makes Envoy stop taking new work on its inbound listeners
// (thaw_http; the internal activator listener keeps serving requests
// already accepted) and waits until no downstream request is active on
// thaw_http, or ctx ends. It first starts Envoy's graceful drain sequence
// (connections are closed after their current request: Connection: close
// on HTTP/1.1, GOAWAY on HTTP/2) without exiting, then stops the inbound
// listeners so no new connection is accepted. Requests in flight, held
// ones included, finish normally. The error is non-nil when Envoy's admin
// API failed or ctx ended before the listener was idle (the count left is
// in the error).
func (e *EnvoyProcess) DrainListeners(ctx context.Context) error {
	base := fmt.Sprintf("http://127.0.0.1:%d", e.AdminPort)
	for _, q := range []string{"?inboundonly", "?inboundonly&graceful&skip_exit"} {
		if _, err := adminDo(ctx, http.MethodPost, base+"/drain_listeners"+q); err != nil {
			return fmt.Errorf("envoy drain_listeners%s: %w", q, err)
		}
	}
	start := time.Now()
	var active int64
	for {
		body, err := adminDo(ctx, http.MethodGet, base+"/stats?filter=^http.thaw_http.downstream_rq_active$")
		if err == nil {
			active = parseStat(body, "http.thaw_http.downstream_rq_active")
			if active == 0 {
				e.logger.Info("envoy listener drained", zap.Duration("took", time.Since(start)))
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("envoy listener drain: %d requests still active: %w", active, ctx.Err())
		case <-e.done:
			return nil
		case <-time.After(drainPoll):
		}
	}
}

// adminDo sends one admin request and returns the body of a 200 answer.
func adminDo(ctx context.Context, method, url string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, method, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s %s: %s: %s", method, url, resp.Status, strings.TrimSpace(string(b)))
	}
	return string(b), nil
}

// parseStat returns the value of "name: value" in Envoy's /stats text, or
// -1 when absent.
func parseStat(stats, name string) int64 {
	for _, l := range strings.Split(stats, "\n") {
		if v, ok := strings.CutPrefix(l, name+": "); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err == nil {
				return n
			}
		}
	}
	return -1
}
