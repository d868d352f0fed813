package main

import (
	"context"
	"net/http"
	"time"
)

// startOneBackend starts thaw local with the single revision r (whose
// autoscaling keeps one backend), waits until it is in mode with that
// backend ready, and returns thaw and the backend's port. The caller stops
// thaw.
func startOneBackend(e *env, dir string, r rev, mode string) (*thaw, int, error) {
	th, err := startThaw(e.ctx, e, dir, localConfig(e.workloadBin, r))
	if err != nil {
		return nil, 0, err
	}
	fail := func(err error) (*thaw, int, error) {
		e.stopLogged(th.process)
		return nil, 0, err
	}
	if err := th.waitStatus(e.ctx, 30*time.Second, mode+" mode, 1 ready", func(rs revStatus) bool {
		return rs.Mode == mode && rs.Ready == 1
	}, r.name); err != nil {
		return fail(err)
	}
	ctx, cancel := context.WithTimeout(e.ctx, 10*time.Second)
	defer cancel()
	ws, err := fetchStats(ctx, &http.Client{Timeout: 5 * time.Second}, th.httpURL, r.host())
	if err != nil {
		return fail(err)
	}
	return th, ws.Port, nil
}
