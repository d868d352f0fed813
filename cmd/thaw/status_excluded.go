package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/thaw-dev/thaw/internal/app"
)

// writeExcluded prints the xDS streams thaw closed as stalled, if any. An
// older thaw without the endpoint (404) prints nothing.
func writeExcluded(ctx context.Context, w io.Writer, admin string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+admin+app.ExcludedPath, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("admin endpoint %s: %w", admin, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		return nil
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("admin endpoint %s%s: %s", admin, app.ExcludedPath, resp.Status)
	}
	nodes, err := app.DecodeExcluded(resp.Body)
	if err != nil {
		return err
	}
	return app.WriteExcludedTable(w, nodes, time.Now())
}
