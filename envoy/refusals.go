package envoy

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// RefusalCounters are the counters of listener thaw_http that explain a
// request Envoy answered itself (a 4xx/5xx without the backend, an upgrade
// refused, a timeout). The stats matcher (stats-sink.yaml) keeps each of
// them; names are without the "http.thaw_http." prefix. An unknown host
// is rq_direct_response (the * catch-all) by default and no_route (the
// router found no virtual host) with --on-demand-hosts.
var RefusalCounters = []string{
	"downstream_rq_4xx",
	"downstream_rq_5xx",
	"downstream_rq_ws_on_non_ws_route",
	"downstream_rq_idle_timeout",
	"downstream_rq_max_duration_reached",
	"downstream_cx_protocol_error",
	"no_route",
	"rq_direct_response",
}

// refusalPrefix is the stat prefix of listener thaw_http's counters.
const refusalPrefix = "http.thaw_http."

// maxStatsBody bounds the admin /stats answer read (bytes).
const maxStatsBody = 1 << 20

// adminStats is the admin /stats?format=json document.
type adminStats struct {
	Stats []struct {
		Name  string          `json:"name"`
		Value json.RawMessage `json:"value"`
	} `json:"stats"`
}

// Refusals asks the Envoy admin server at adminURL for RefusalCounters
// (GET /stats?format=json with a filter) and returns them by name (without
// the prefix). Errors: transport, a non-200 status, or a malformed body.
func Refusals(ctx context.Context, c *http.Client, adminURL string) (map[string]float64, error) {
	filter := `^http\.thaw_http\.(` + strings.Join(RefusalCounters, "|") + `)$`
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, adminURL+"/stats?format=json&filter="+url.QueryEscape(filter), nil)
	if err != nil {
		return nil, fmt.Errorf("envoy admin stats: %w", err)
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, fmt.Errorf("envoy admin stats: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxStatsBody))
	if err != nil {
		return nil, fmt.Errorf("envoy admin stats: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("envoy admin stats: status %d", resp.StatusCode)
	}
	var doc adminStats
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, fmt.Errorf("envoy admin stats: %w", err)
	}
	out := make(map[string]float64, len(RefusalCounters))
	for _, s := range doc.Stats {
		var v float64
		if json.Unmarshal(s.Value, &v) != nil {
			continue // histograms have an object value
		}
		out[strings.TrimPrefix(s.Name, refusalPrefix)] = v
	}
	return out, nil
}
