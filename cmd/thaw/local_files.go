package main

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/thaw-dev/thaw/internal/app"
	"github.com/thaw-dev/thaw/xds/translate"
)

// envoyFileBudget works out the open-file limit `thaw local` gives its
// Envoy (--envoy-open-files, default the hard limit) and sets the release
// path's connection bounds in xcfg from it (docs/reliability.md, "Open
// files"). The activator's held-request bound is the budget's MaxHeld.
func envoyFileBudget(logger *zap.Logger, want int, xcfg *translate.Config) (app.FileBudget, error) {
	limit, err := app.EnvoyFileLimit(want)
	if err != nil {
		return app.FileBudget{}, fmt.Errorf("--envoy-open-files: %w", err)
	}
	b := app.NewFileBudget(limit)
	xcfg.ActivatorMaxConnections = uint32(b.Connections)
	xcfg.ActivatorMaxConnectionsPerBackend = uint32(min(b.Connections, translate.DefaultActivatorMaxConnectionsPerBackend))
	logger.Info("envoy open-file budget", zap.Int("limit", b.Limit), zap.Int("reserve", b.Reserve),
		zap.Int("activatorConnections", b.Connections), zap.Int("maxHeld", b.MaxHeld))
	return b, nil
}

// watchEnvoyFiles gives the Envoy process its open-file limit (an adopted
// Envoy too) and returns the watch that reports when it runs out anyway.
func watchEnvoyFiles(logger *zap.Logger, proc *app.EnvoyProcess, b app.FileBudget, reg prometheus.Registerer) (*app.FileWatch, error) {
	if err := app.SetEnvoyFileLimit(proc.Pid, b.Limit); err != nil {
		logger.Warn("envoy keeps its open-file limit", zap.Error(err))
	}
	return app.NewFileWatch(app.FileWatchOptions{Logger: logger.Named("envoy"), LogPath: proc.LogPath,
		Pid: proc.Pid, Limit: b.Limit, Registerer: reg})
}
