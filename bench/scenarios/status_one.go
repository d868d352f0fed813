package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
)

// statusOf fetches the /status rows of the named local revisions, one
// /status?revision=local/<name> each, keyed by revision ("local/<name>");
// a revision thaw does not know (404) is absent. Each answer costs thaw a
// lookup, not a walk of every revision (1 s of CPU at 100,000), so polling
// does not weigh on what a scenario measures. An older thaw that ignores
// the parameter answers every row; the named one is picked from them.
func (th *thaw) statusOf(ctx context.Context, c *http.Client, names ...string) (map[string]revStatus, error) {
	out := make(map[string]revStatus, len(names))
	for _, name := range names {
		key := "local/" + name
		row, found, err := th.statusRow(ctx, c, key)
		if err != nil {
			return nil, err
		}
		if found {
			out[key] = row
		}
	}
	return out, nil
}

// statusRow fetches revision key's row from /status?revision=key; false
// when thaw answers 404.
func (th *thaw) statusRow(ctx context.Context, c *http.Client, key string) (revStatus, bool, error) {
	u := th.adminURL + "/status?revision=" + url.QueryEscape(key)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return revStatus{}, false, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return revStatus{}, false, err
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusNotFound:
		return revStatus{}, false, nil
	default:
		return revStatus{}, false, fmt.Errorf("/status?revision=%s: %s", key, resp.Status)
	}
	var rows []revStatus
	if err := json.NewDecoder(resp.Body).Decode(&rows); err != nil {
		return revStatus{}, false, fmt.Errorf("/status?revision=%s: %w", key, err)
	}
	for _, r := range rows {
		if r.Revision == key {
			return r, true, nil
		}
	}
	return revStatus{}, false, nil
}
